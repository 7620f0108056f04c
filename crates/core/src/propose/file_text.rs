//! A model file's text as dbt reads it. dbt strips whitespace from both ends of a file
//! before it parses it (`load_file_contents(strip=True)`), so the manifest's `raw_code`,
//! which a diff's old text comes from, has no final newline where the file has one. A
//! diff is compared with the file as dbt reads it (line endings aside too: an editor's
//! choice, not a change to the model), and written in the file's own framing, so
//! applying and undoing it gives back the file byte for byte.

/// `text` as dbt reads it, line endings as `\n`.
pub fn as_dbt_reads(text: &str) -> String {
    text.trim().replace("\r\n", "\n")
}

/// Do two texts read the same to dbt, line endings aside?
pub fn same_as_dbt_reads(a: &str, b: &str) -> bool {
    as_dbt_reads(a) == as_dbt_reads(b)
}

/// The first place the file differs from `expected` as dbt reads them, by the file's
/// own line number, quoting both lines; None when they read the same. `expected_is`
/// names what the file is compared with ("the proposal").
pub fn first_difference(file: &str, expected: &str, expected_is: &str) -> Option<String> {
    let (ours, theirs) = (as_dbt_reads(file), as_dbt_reads(expected));
    if ours == theirs {
        return None;
    }
    // Lines dbt does not read (blank ones at the top) still count in the file.
    let skipped = file[..file.len() - file.trim_start().len()]
        .matches('\n')
        .count();
    let mut file_lines = ours.lines();
    let mut expected_lines = theirs.lines();
    let mut line = skipped;
    loop {
        line += 1;
        match (file_lines.next(), expected_lines.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => {
                return Some(format!(
                    "line {line}: the file has `{}`, {expected_is} `{}`",
                    shown(a),
                    shown(b)
                ))
            }
            (Some(a), None) => {
                return Some(format!(
                    "the file goes on at line {line} with `{}`, where {expected_is} ends",
                    shown(a)
                ))
            }
            (None, Some(b)) => {
                return Some(format!(
                    "the file ends before line {line}, where {expected_is} goes on with `{}`",
                    shown(b)
                ))
            }
            (None, None) => return Some("they differ in their line endings".to_string()),
        }
    }
}

/// A line as quoted in a message: cut short where it is long.
fn shown(line: &str) -> String {
    const LONGEST: usize = 100;
    match line.char_indices().nth(LONGEST) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// `content` framed as `file` is: the file's whitespace before and after its text (a
/// final newline) and its line endings, so writing the proposal's text changes only
/// what dbt reads.
pub fn framed_like(content: &str, file: &str) -> String {
    let before = &file[..file.len() - file.trim_start().len()];
    let after = &file[file.trim_end().len()..];
    let body = content.trim().replace("\r\n", "\n");
    let body = if uses_crlf(file) {
        body.replace('\n', "\r\n")
    } else {
        body
    };
    format!("{before}{body}{after}")
}

/// Does every line of the file end in `\r\n`?
fn uses_crlf(file: &str) -> bool {
    let text = file.trim_end();
    let newlines = text.matches('\n').count();
    newlines > 0 && text.matches("\r\n").count() == newlines
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "select 1 as a,\n  2 as b\nfrom t";

    #[test]
    fn a_file_reads_as_its_manifest_copy_whatever_its_final_newline_and_line_endings() {
        for file in [
            "select 1 as a,\n  2 as b\nfrom t\n",
            "select 1 as a,\n  2 as b\nfrom t",
            "\n\nselect 1 as a,\n  2 as b\nfrom t\n\n",
            "select 1 as a,\r\n  2 as b\r\nfrom t\r\n",
        ] {
            assert!(same_as_dbt_reads(file, MANIFEST), "{file:?}");
            assert_eq!(first_difference(file, MANIFEST, "the proposal"), None);
        }
    }

    #[test]
    fn what_differs_is_named_by_the_files_own_line() {
        let said = |file: &str| first_difference(file, MANIFEST, "the proposal").unwrap();
        assert_eq!(
            said("\nselect 1 as a,\n  3 as b\nfrom t\n"),
            "line 3: the file has `  3 as b`, the proposal `  2 as b`"
        );
        assert_eq!(
            said("select 1 as a,\n  2 as b\nfrom t\nwhere x\n"),
            "the file goes on at line 4 with `where x`, where the proposal ends"
        );
        assert_eq!(
            said("select 1 as a,\n  2 as b\n"),
            "the file ends before line 3, where the proposal goes on with `from t`"
        );
        let long = format!("select {}\n", "x".repeat(300));
        assert!(said(&long).len() < 300, "{}", said(&long));
    }

    #[test]
    fn written_text_keeps_the_files_framing_so_an_undo_gives_it_back_byte_for_byte() {
        let new = "select 1 as a,\n  20 as b\nfrom t";
        for file in [
            "select 1 as a,\n  2 as b\nfrom t\n",
            "select 1 as a,\n  2 as b\nfrom t",
            "\n select 1 as a,\n  2 as b\nfrom t\n\n",
            "select 1 as a,\r\n  2 as b\r\nfrom t\r\n",
        ] {
            let applied = framed_like(new, file);
            assert!(same_as_dbt_reads(&applied, new), "{applied:?}");
            assert_eq!(uses_crlf(&applied), uses_crlf(file), "{applied:?}");
            assert_eq!(framed_like(MANIFEST, &applied), file);
        }
    }
}
