//! Writing outputs: standard output, or a file replaced atomically (temporary file + rename).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use anyhow::{Context, Result};

/// The temporary file being written, removed if the process is interrupted (Ctrl-C, SIGTERM, SIGHUP).
static WRITING: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Remove the temporary file being written, if any (what an interrupt does before exiting).
fn remove_unfinished() {
    if let Some(tmp) = WRITING.lock().ok().and_then(|mut w| w.take()) {
        let _ = std::fs::remove_file(tmp);
    }
}

fn remove_on_interrupt(path: Option<PathBuf>) {
    static HANDLER: Once = Once::new();
    HANDLER.call_once(|| {
        // without a handler the default action (exit) stays; a second handler elsewhere is not ours to replace
        let _ = ctrlc::set_handler(|| {
            remove_unfinished();
            std::process::exit(130);
        });
    });
    if let Ok(mut w) = WRITING.lock() {
        *w = path;
    }
}

/// Write `contents` to `path` so that readers see the old file or the whole new one, never a part.
///
/// On Linux the contents go to an unnamed file first ([`unnamed`]: nothing is left if the process is killed while
/// writing); elsewhere, and where the file system has no unnamed files, a temporary file is created beside
/// `path` exclusively under a random name (`O_EXCL`: a file or symlink
/// planted at a guessable name cannot be written through), gets the permissions and — where allowed — the
/// owner of the file it replaces (a new file gets the usual mode under the umask), is synced, and is renamed
/// over `path`. It is removed on any error, and when the process is interrupted while writing. Its name holds
/// the writer's process id (`.out.json.4242.Xy7q.ctxfit-tmp`): a temporary beside `path` left by a writer that
/// was killed (its process is gone) is removed by the next write ([`remove_stale_temporaries`]).
///
/// What is not a file is written to as it is: a device (`-o /dev/null`), a pipe (`-o /dev/stdout` in a pipeline,
/// a FIFO), a socket — renaming a file over one would put a file where the device was (as root, over
/// `/dev/null` itself). A link to a file has the file it points to replaced, and stays a link.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    match std::fs::metadata(path) {
        // a folder named as the output is the caller's mistake (exit 2), as an input that is not there is
        Ok(m) if m.is_dir() => {
            return Err(
                crate::BadInput(format!("cannot write {}: it is a folder", path.display())).into(),
            )
        }
        Ok(m) if !m.is_file() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| f.write_all(contents).and_then(|()| f.flush()))
                .with_context(|| format!("cannot write {}", path.display()))
        }
        _ => {}
    }
    // (a link to nothing yet is replaced by the file)
    let resolved = std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_symlink())
        .then(|| std::fs::canonicalize(path).ok())
        .flatten();
    let path = resolved.as_deref().unwrap_or(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // a folder that is not there is the caller's mistake too (exit 2), not ours
    if let Some(missing) = missing_folder(path) {
        return Err(missing.into());
    }
    let file_name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let replaced = std::fs::metadata(path).ok().filter(|m| m.is_file());
    remove_stale_temporaries(dir, &file_name.to_string_lossy());
    #[cfg(target_os = "linux")]
    match unnamed::write(dir, path, replaced.as_ref(), contents) {
        unnamed::Outcome::Written => return Ok(()),
        unnamed::Outcome::Failed(e) => {
            return Err(e).with_context(|| format!("cannot write {}", path.display()))
        }
        // the file system has no unnamed files (O_TMPFILE): a named temporary, as elsewhere
        unnamed::Outcome::Unsupported => {}
    }
    let result = (|| -> std::io::Result<()> {
        let prefix = format!(".{}.{}.", file_name.to_string_lossy(), std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".ctxfit-tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // created as a new output file would be (0666 under the umask); a replaced file's mode is set below
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let mut tmp = builder.tempfile_in(dir)?;
        remove_on_interrupt(Some(tmp.path().to_owned()));
        if let Some(old) = &replaced {
            tmp.as_file().set_permissions(old.permissions())?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                // only root may give a file away; anyone may keep their own uid and group
                let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(old.uid()), Some(old.gid()));
            }
        }
        tmp.write_all(contents)?;
        tmp.as_file().sync_all()?;
        let persisted = tmp.persist(path).map_err(|e| e.error);
        remove_on_interrupt(None);
        persisted.map(drop)
    })();
    remove_on_interrupt(None);
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// On Linux the output is first written to an unnamed file in its folder (`O_TMPFILE`): a writer killed while
/// writing leaves nothing behind. Once whole and synced it gets a temporary name (linked through
/// `/proc/self/fd`, exclusively) and is renamed over the output, so only a kill between those two calls can
/// leave a temporary — which the next write removes.
#[cfg(target_os = "linux")]
mod unnamed {
    use std::io::Write;
    use std::path::Path;

    use rustix::fs::{AtFlags, Mode, OFlags, CWD};

    pub enum Outcome {
        Written,
        Failed(std::io::Error),
        Unsupported,
    }

    pub fn write(
        dir: &Path,
        path: &Path,
        replaced: Option<&std::fs::Metadata>,
        contents: &[u8],
    ) -> Outcome {
        let flags = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(dir, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => fd,
            // no O_TMPFILE here (the file system, or an old kernel): EOPNOTSUPP, EISDIR, EINVAL
            Err(e)
                if e == rustix::io::Errno::OPNOTSUPP
                    || e == rustix::io::Errno::ISDIR
                    || e == rustix::io::Errno::INVAL =>
            {
                return Outcome::Unsupported
            }
            Err(e) => return Outcome::Failed(e.into()),
        };
        let mut file = std::fs::File::from(fd);
        let written = (|| -> std::io::Result<()> {
            if let Some(old) = replaced {
                file.set_permissions(old.permissions())?;
                use std::os::unix::fs::MetadataExt;
                // only root may give a file away; anyone may keep their own uid and group
                let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
            }
            file.write_all(contents)?;
            file.sync_all()
        })();
        if let Err(e) = written {
            return Outcome::Failed(e);
        }
        use std::os::fd::AsRawFd;
        let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        for attempt in 0..16u32 {
            let tmp = dir.join(format!(
                ".{name}.{}.{}.ctxfit-tmp",
                std::process::id(),
                unique(attempt)
            ));
            match rustix::fs::linkat(CWD, proc_path.as_str(), CWD, &tmp, AtFlags::SYMLINK_FOLLOW) {
                Ok(()) => {
                    super::remove_on_interrupt(Some(tmp.clone()));
                    let renamed = std::fs::rename(&tmp, path);
                    super::remove_on_interrupt(None);
                    if let Err(e) = renamed {
                        let _ = std::fs::remove_file(&tmp);
                        return Outcome::Failed(e);
                    }
                    return Outcome::Written;
                }
                Err(rustix::io::Errno::EXIST) => continue,
                // no /proc, or linking refused: a named temporary instead
                Err(
                    rustix::io::Errno::NOENT | rustix::io::Errno::PERM | rustix::io::Errno::XDEV,
                ) => return Outcome::Unsupported,
                Err(e) => return Outcome::Failed(e.into()),
            }
        }
        Outcome::Failed(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "no free temporary name beside the output",
        ))
    }

    /// A name part no other writer is likely to pick: the time's nanoseconds, mixed with the attempt.
    fn unique(attempt: u32) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mixed = (nanos ^ (u64::from(attempt) << 56)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        format!("{:x}", mixed >> 24)
    }
}

/// Remove the temporaries of ours beside `dir/name` whose writer is gone: on Linux, those whose process id names
/// no running process; elsewhere, those a day old. Nothing else is touched, and a failure is left alone.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let proc_fs = Path::new("/proc/self").exists();
    for entry in entries.flatten() {
        let entry_name = entry.file_name().to_string_lossy().into_owned();
        let Some(middle) = entry_name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".ctxfit-tmp"))
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let stale = match middle.split('.').next().and_then(|p| p.parse::<u32>().ok()) {
            Some(pid) if proc_fs => !Path::new(&format!("/proc/{pid}")).exists(),
            _ => meta
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > std::time::Duration::from_secs(24 * 3600)),
        };
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Write a table (or any text for people to read) to standard output, its control characters escaped
/// ([`crate::shown::shown`]).
pub fn emit_table(contents: &str) -> Result<()> {
    emit(None, &crate::shown::shown(contents))
}

/// `-o -`: standard output, as `-` is standard input (never a file named `-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Write to `out` when given (`-`: standard output), else to standard output.
pub fn emit(out: Option<&Path>, contents: &str) -> Result<()> {
    match out.filter(|p| !is_stdout(p)) {
        // a name ending in `.gz` gets gzip, as the inputs are read
        Some(path)
            if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("gz")) =>
        {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(contents.as_bytes())
                .and_then(|()| gz.finish())
                .context("cannot gzip the output")
                .and_then(|bytes| write_atomically(path, &bytes))
        }
        Some(path) => write_atomically(path, contents.as_bytes()),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(contents.as_bytes())
                .and_then(|()| stdout.flush())
            {
                // the reader went away (`ctxfit ... | head`): not an error of ours
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to standard output"),
            }
        }
    }
}

/// Can a file be written at `path`, as far as can be told before the work that makes it (a replay of a large
/// folder takes minutes): not when it names a folder, or a folder that is not there. Anything else the write
/// itself says.
pub fn check_writable(path: &Path) -> Result<()> {
    if is_stdout(path) {
        return Err(crate::BadInput(
            "cannot write a drawing to standard output (`-`): it holds the table; name a file"
                .into(),
        )
        .into());
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(
            crate::BadInput(format!("cannot write {}: it is a folder", path.display())).into(),
        );
    }
    missing_folder(path).map_or(Ok(()), |missing| Err(missing.into()))
}

/// The refusal of an output whose folder is not there.
fn missing_folder(path: &Path) -> Option<crate::BadInput> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Some(crate::BadInput(format!(
                "cannot write {}: there is no folder {}",
                path.display(),
                dir.display()
            )))
        }
        _ => None,
    }
}

/// Is `output` the file `input` names (the same file, whatever the path: a link, `./x`, another spelling)? `-`
/// (standard input, standard output) and a file that does not exist yet are not.
pub fn is_the_input(input: Option<&Path>, output: &Path) -> bool {
    if is_stdout(output) {
        return false;
    }
    let Some(input) = input.filter(|i| !crate::input::is_stdin(i)) else {
        return false;
    };
    match (std::fs::metadata(input), std::fs::metadata(output)) {
        #[cfg(unix)]
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            a.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino())
        }
        #[cfg(not(unix))]
        (Ok(a), Ok(_)) => {
            a.is_file() && std::fs::canonicalize(input).ok() == std::fs::canonicalize(output).ok()
        }
        _ => false,
    }
}

pub use ctxfit_retention::thousands;

/// The JSON text of one document (JSON Lines for a conversation read a message a line), or of a list of them
/// when a file held several sessions.
pub fn documents_json(
    mut docs: Vec<(serde_json::Value, ctxfit_model::Envelope)>,
    compact: bool,
) -> Result<String> {
    let value = if docs.len() == 1 {
        let (doc, envelope) = docs.swap_remove(0);
        // a conversation read a message a line is written so
        if let Some(lines) = envelope.write_lines(&doc) {
            return Ok(lines);
        }
        doc
    } else {
        serde_json::Value::Array(docs.into_iter().map(|(d, _)| d).collect())
    };
    let mut text = if compact {
        serde_json::to_string(&value)?
    } else {
        serde_json::to_string_pretty(&value)?
    };
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The temporary file being written is process-wide state: these tests take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = std::env::temp_dir().join(format!("ctxfit-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // a directory in the way: the write fails and the temp file is gone
        let blocked = dir.join("sub");
        std::fs::create_dir_all(blocked.join("x")).unwrap();
        assert!(write_atomically(&blocked, b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_interrupt_removes_the_temporary_file_being_written() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = std::env::temp_dir().join(format!("ctxfit-int-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(".out.json.x.ctxfit-tmp");
        std::fs::write(&tmp, b"half").unwrap();
        remove_on_interrupt(Some(tmp.clone()));
        remove_unfinished();
        assert!(!tmp.exists());
        // after a write, nothing is registered: an interrupt then removes nothing
        let done = dir.join("done.json");
        write_atomically(&done, b"whole").unwrap();
        remove_unfinished();
        assert_eq!(std::fs::read(&done).unwrap(), b"whole");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_planted_link_is_not_written_through() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ctxfit-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("secret.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // links planted at the names the old code used (pid-based) and at a plausible random one
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, b"untouched").unwrap();
        for name in [
            format!(".secret.json.{}.tmp", std::process::id()),
            ".secret.json.ctxfit-tmp".to_owned(),
        ] {
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        }
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
        // a new file gets the ordinary mode, not the temporary file's 0600
        let fresh = dir.join("fresh.json");
        write_atomically(&fresh, b"x").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_ne!(mode & 0o044, 0, "{mode:o}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_device_or_a_pipe_is_written_to_and_a_link_keeps_pointing_at_the_file() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        use std::os::unix::fs::FileTypeExt;
        // a device stays the device (renaming over it would put a file in its place)
        write_atomically(Path::new("/dev/null"), b"gone").unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        let dir = std::env::temp_dir().join(format!("ctxfit-dev-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // a FIFO: what is written reaches its reader, and it stays a FIFO
        let fifo = dir.join("pipe.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(fifo).unwrap())
            };
            write_atomically(&fifo, b"through").unwrap();
            assert_eq!(reader.join().unwrap(), b"through");
            assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        }
        // a link to a file: the file is replaced, the link stays
        let file = dir.join("real.json");
        std::fs::write(&file, b"old").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        // a folder is named as one
        let err = write_atomically(&dir, b"x").unwrap_err().to_string();
        assert!(err.contains("it is a folder"), "{err}");
        // and a folder that is not there, as the caller's mistake
        let err = write_atomically(&dir.join("no/such/x.json"), b"x").unwrap_err();
        assert!(err.downcast_ref::<crate::BadInput>().is_some(), "{err}");
        assert!(err.to_string().contains("there is no folder"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
