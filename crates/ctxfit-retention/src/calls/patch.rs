//! Codex CLI's `apply_patch`: one call, a patch of several files (`*** Begin Patch` … `*** End Patch`), read as
//! one edit per file it names.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/new.md          a file written whole: its `+` lines
//! +# New
//! *** Update File: src/app.ts        hunks: context (` `), removed (`-`) and added (`+`) lines, after `@@`
//! *** Move to: src/main.ts           (the file renamed after its hunks)
//! @@ function main() {
//!    const a = 1;
//! -  const b = 2;
//! +  const b = 3;
//! *** Delete File: old.txt
//! *** End Patch
//! ```

use super::{normalise, EditCall, EditOp};

/// The file a patch is changing, and how.
enum Change<'a> {
    Add(Vec<&'a str>),
    Update {
        hunk_old: Vec<&'a str>,
        hunk_new: Vec<&'a str>,
        moved_to: Option<&'a str>,
    },
}

/// The edits of the patch in `text`, one per file, in the patch's order; empty when `text` holds no patch. A
/// patch cut short (no `*** End Patch`) gives what it holds.
pub(super) fn patch_edits(text: &str) -> Vec<EditCall> {
    let Some(start) = text.find("*** Begin Patch") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut file: Option<(&str, Vec<EditOp>, Change<'_>)> = None;
    for line in text[start..].lines().skip(1) {
        let header = |prefix: &str| line.strip_prefix(prefix).map(str::trim);
        if line.starts_with("*** End Patch") {
            break;
        }
        if let Some(path) = header("*** Add File:") {
            finish(&mut out, file.take());
            file = Some((path, Vec::new(), Change::Add(Vec::new())));
        } else if let Some(path) = header("*** Update File:") {
            finish(&mut out, file.take());
            let update = Change::Update {
                hunk_old: Vec::new(),
                hunk_new: Vec::new(),
                moved_to: None,
            };
            file = Some((path, Vec::new(), update));
        } else if let Some(path) = header("*** Delete File:") {
            finish(&mut out, file.take());
            let delete = EditOp::Opaque {
                description: "delete the file".into(),
            };
            out.push(edit(path, vec![delete]));
        } else if let Some((_, ops, change)) = file.as_mut() {
            match change {
                Change::Add(lines) => {
                    if let Some(l) = line.strip_prefix('+') {
                        lines.push(l);
                    }
                }
                Change::Update {
                    hunk_old,
                    hunk_new,
                    moved_to,
                } => {
                    if let Some(to) = header("*** Move to:") {
                        *moved_to = Some(to);
                    } else if line.starts_with("@@") || line.starts_with("*** End of File") {
                        end_hunk(ops, hunk_old, hunk_new);
                    } else if let Some(l) = line.strip_prefix('-') {
                        hunk_old.push(l);
                    } else if let Some(l) = line.strip_prefix('+') {
                        hunk_new.push(l);
                    } else {
                        // context: a line of the file either side (an empty line is an empty context line)
                        let l = line.strip_prefix(' ').unwrap_or(line);
                        hunk_old.push(l);
                        hunk_new.push(l);
                    }
                }
            }
        }
    }
    finish(&mut out, file);
    out
}

fn edit(path: &str, ops: Vec<EditOp>) -> EditCall {
    EditCall {
        path: Some(normalise(path)),
        ops,
        intent: None,
    }
}

/// A hunk as an edit: its old lines (context and removed) replaced by its new ones (context and added); a hunk
/// of added lines alone says nothing of where they go.
fn end_hunk(ops: &mut Vec<EditOp>, old: &mut Vec<&str>, new: &mut Vec<&str>) {
    if old.iter().any(|l| !l.is_empty()) {
        ops.push(EditOp::Replace {
            old: old.join("\n"),
            new: new.join("\n"),
            all: false,
        });
    } else if !new.is_empty() {
        ops.push(EditOp::Opaque {
            description: format!("insert {} line(s)", new.len()),
        });
    }
    old.clear();
    new.clear();
}

fn finish<'a>(out: &mut Vec<EditCall>, file: Option<(&'a str, Vec<EditOp>, Change<'a>)>) {
    let Some((path, mut ops, change)) = file else {
        return;
    };
    match change {
        Change::Add(lines) => {
            let mut content = lines.join("\n");
            if !lines.is_empty() {
                content.push('\n');
            }
            ops.push(EditOp::Write { content });
        }
        Change::Update {
            mut hunk_old,
            mut hunk_new,
            moved_to,
        } => {
            end_hunk(&mut ops, &mut hunk_old, &mut hunk_new);
            if let Some(to) = moved_to {
                ops.push(EditOp::Opaque {
                    description: format!("move to {}", normalise(to)),
                });
            }
        }
    }
    out.push(edit(path, ops));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_an_edit_per_file() {
        let patch = "*** Begin Patch\n\
            *** Add File: ./docs/new.md\n+# New\n+\n+text\n\
            *** Update File: src/app.ts\n\
            @@ function main() {\n   const a = 1;\n-  const b = 2;\n+  const b = 3;\n   return a + b;\n\
            @@\n-// old footer\n+// new footer\n\
            \n\
            *** Update File: src/util.ts\n*** Move to: src/lib/util.ts\n@@\n+export {};\n*** End of File\n\
            *** Delete File: old.txt\n\
            *** End Patch\n\
            *** Add File: after-the-end.md\n+never read\n";
        let edits = patch_edits(patch);
        let paths: Vec<_> = edits.iter().map(|e| e.path.as_deref().unwrap()).collect();
        assert_eq!(
            paths,
            ["docs/new.md", "src/app.ts", "src/util.ts", "old.txt"]
        );
        assert_eq!(
            edits[0].ops,
            [EditOp::Write {
                content: "# New\n\ntext\n".into()
            }]
        );
        assert_eq!(
            edits[1].ops,
            [
                EditOp::Replace {
                    old: "  const a = 1;\n  const b = 2;\n  return a + b;".into(),
                    new: "  const a = 1;\n  const b = 3;\n  return a + b;".into(),
                    all: false
                },
                // the empty line before the next file is an empty context line
                EditOp::Replace {
                    old: "// old footer\n".into(),
                    new: "// new footer\n".into(),
                    all: false
                },
            ]
        );
        assert_eq!(
            edits[2].ops,
            [
                EditOp::Opaque {
                    description: "insert 1 line(s)".into()
                },
                EditOp::Opaque {
                    description: "move to src/lib/util.ts".into()
                },
            ]
        );
        assert_eq!(
            edits[3].ops,
            [EditOp::Opaque {
                description: "delete the file".into()
            }]
        );
        assert!(edits.iter().all(|e| e.intent.is_none()));
    }

    #[test]
    fn no_patch_and_a_patch_cut_short() {
        assert!(patch_edits("").is_empty());
        assert!(patch_edits("*** Update File: a.rs\n-x\n+y\n").is_empty());
        let cut = patch_edits("*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y");
        assert_eq!(cut.len(), 1);
        assert_eq!(
            cut[0].ops,
            [EditOp::Replace {
                old: "x".into(),
                new: "y".into(),
                all: false
            }]
        );
    }
}
