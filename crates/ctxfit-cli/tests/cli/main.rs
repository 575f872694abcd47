//! The `ctxfit` binary end to end: outputs, exit codes, and that bad input loses nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ctxfit(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = spawn(args);
    if let Some(input) = stdin {
        // the program may exit before reading its input (bad arguments): a closed pipe is fine
        let _ = child.stdin.take().unwrap().write_all(input);
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

/// `ctxfit ARGS` started, its standard streams piped.
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_ctxfit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ctxfit-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn corpus() -> PathBuf {
    ctxfit_testkit::corpus_dir()
        .expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)")
}

mod compact;
mod html;
mod replay;
mod sessions;
