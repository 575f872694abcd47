//! Writing outputs: standard output, or a file replaced atomically (temporary file + rename).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Write `contents` to `path` so that readers see the old file or the whole new one, never a part.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// Write to `out` when given, else to standard output.
pub fn emit(out: Option<&Path>, contents: &str) -> Result<()> {
    match out {
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

pub use ctxfit_retention::thousands;

/// The JSON text of one document, or of a list of them when a file held several sessions.
pub fn documents_json(mut docs: Vec<serde_json::Value>, compact: bool) -> Result<String> {
    let value = if docs.len() == 1 {
        docs.swap_remove(0)
    } else {
        serde_json::Value::Array(docs)
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

    #[test]
    fn atomic_write_replaces_whole_file_and_leaves_no_temp() {
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
