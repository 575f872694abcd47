//! Repository checks: every Rust source file opens with a `//!` module doc, and every built-in rule crate
//! (`crates/ctxfit-retain-*`) is linked by `ctxfit-plugins`, or its rule would silently not exist.

use std::path::{Path, PathBuf};

use anyhow::Result;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out)?;
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Every problem found, one line each; empty when the tree is tidy.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "benches", "examples"] {
        let d = root.join(dir);
        if d.is_dir() {
            rust_files(&d, &mut files)?;
        }
    }
    files.sort();
    let mut problems = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            let rel = f.strip_prefix(root).unwrap_or(&f);
            problems.push(format!(
                "{}: does not open with a `//!` doc line",
                rel.display()
            ));
        }
    }
    problems.extend(check_plugins_link_every_rule(root)?);
    Ok(problems)
}

fn check_plugins_link_every_rule(root: &Path) -> Result<Vec<String>> {
    let plugins_lib = std::fs::read_to_string(root.join("crates/ctxfit-plugins/src/lib.rs"))?;
    let plugins_toml = std::fs::read_to_string(root.join("crates/ctxfit-plugins/Cargo.toml"))?;
    let mut problems = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(root.join("crates"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("ctxfit-retain-"))
        .collect();
    names.sort();
    for name in names {
        let ident = name.replace('-', "_");
        if !plugins_lib.contains(&format!("extern crate {ident} as _;")) {
            problems.push(format!(
                "crates/ctxfit-plugins/src/lib.rs: does not link `{name}` (add `extern crate {ident} as _;`)"
            ));
        }
        if !plugins_toml.contains(&format!("{name}.workspace = true")) {
            problems.push(format!(
                "crates/ctxfit-plugins/Cargo.toml: `{name}` is not a dependency"
            ));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tree_is_tidy() {
        let problems = super::check(&crate::workspace_root()).unwrap();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
