//! A proposal's SQL change as rows a person can read side by side (old left, new right),
//! or as one unified column when the terminal is too narrow for two. Computed once per
//! content hash: the hash changes whenever the content does, so a cached entry is never
//! stale, and drawing a frame only slices the rows it shows.

use similar::{DiffOp, TextDiff};

/// Below this many columns two sides of SQL no longer fit; use one column.
pub const SIDE_BY_SIDE_MIN_WIDTH: u16 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Same,
    /// Only on the old side.
    Removed,
    /// Only on the new side.
    Added,
    /// Different on both sides, paired line by line.
    Changed,
}

/// One line of one side, with its 1-based line number in that file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub number: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideBySideRow {
    pub old: Option<Cell>,
    pub new: Option<Cell>,
    pub change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    Same,
    Removed,
    Added,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnifiedRow {
    pub sign: Sign,
    pub number: usize,
    pub text: String,
}

/// Both layouts of one diff; which one is drawn depends on the width at draw time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRows {
    pub side_by_side: Vec<SideBySideRow>,
    pub unified: Vec<UnifiedRow>,
}

impl DiffRows {
    pub fn compute(old: &str, new: &str) -> DiffRows {
        let side_by_side = side_by_side(old, new);
        let unified = unified(&side_by_side);
        DiffRows {
            side_by_side,
            unified,
        }
    }
}

fn cell(lines: &[&str], index: usize) -> Cell {
    Cell {
        number: index + 1,
        text: lines[index].to_string(),
    }
}

pub fn side_by_side(old: &str, new: &str) -> Vec<SideBySideRow> {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = TextDiff::from_slices(&old_lines, &new_lines);
    let mut rows = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for offset in 0..len {
                    rows.push(SideBySideRow {
                        old: Some(cell(&old_lines, old_index + offset)),
                        new: Some(cell(&new_lines, new_index + offset)),
                        change: Change::Same,
                    });
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                for offset in 0..old_len {
                    rows.push(SideBySideRow {
                        old: Some(cell(&old_lines, old_index + offset)),
                        new: None,
                        change: Change::Removed,
                    });
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                for offset in 0..new_len {
                    rows.push(SideBySideRow {
                        old: None,
                        new: Some(cell(&new_lines, new_index + offset)),
                        change: Change::Added,
                    });
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                // Pair the replaced lines so a changed line sits next to its new form;
                // the longer side runs on alone.
                for offset in 0..old_len.max(new_len) {
                    let old = (offset < old_len).then(|| cell(&old_lines, old_index + offset));
                    let new = (offset < new_len).then(|| cell(&new_lines, new_index + offset));
                    let change = match (&old, &new) {
                        (Some(_), Some(_)) => Change::Changed,
                        (Some(_), None) => Change::Removed,
                        _ => Change::Added,
                    };
                    rows.push(SideBySideRow { old, new, change });
                }
            }
        }
    }
    rows
}

/// The unified form: within each run of changed rows, every removed line comes before
/// every added line, as in `diff -u`.
pub fn unified(rows: &[SideBySideRow]) -> Vec<UnifiedRow> {
    let mut out = Vec::new();
    let mut added = Vec::new();
    for row in rows {
        if row.change == Change::Same {
            out.append(&mut added);
            if let Some(new) = &row.new {
                out.push(UnifiedRow {
                    sign: Sign::Same,
                    number: new.number,
                    text: new.text.clone(),
                });
            }
            continue;
        }
        if let Some(old) = &row.old {
            out.push(UnifiedRow {
                sign: Sign::Removed,
                number: old.number,
                text: old.text.clone(),
            });
        }
        if let Some(new) = &row.new {
            added.push(UnifiedRow {
                sign: Sign::Added,
                number: new.number,
                text: new.text.clone(),
            });
        }
    }
    out.append(&mut added);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str =
        "select\n  charge_id,\n  cast(zip_code as integer) as zip_code\nfrom charges\n";
    const NEW: &str =
        "select\n  charge_id,\n  zip_code::varchar(12) as zip_code,\n  customer_id\nfrom charges\n";

    #[test]
    fn changed_lines_sit_side_by_side() {
        let rows = side_by_side(OLD, NEW);
        let changes: Vec<Change> = rows.iter().map(|row| row.change).collect();
        assert_eq!(
            changes,
            [
                Change::Same,
                Change::Same,
                Change::Changed,
                Change::Added,
                Change::Same
            ]
        );
        assert_eq!(rows[2].old.as_ref().unwrap().number, 3);
        assert_eq!(
            rows[2].new.as_ref().unwrap().text,
            "  zip_code::varchar(12) as zip_code,"
        );
        assert_eq!(rows[3].new.as_ref().unwrap().number, 4);
        assert_eq!(rows[4].old.as_ref().unwrap().number, 4);
        assert_eq!(rows[4].new.as_ref().unwrap().number, 5);
    }

    #[test]
    fn unified_puts_removals_before_additions() {
        let rows = DiffRows::compute(OLD, NEW).unified;
        let signs: Vec<Sign> = rows.iter().map(|row| row.sign).collect();
        assert_eq!(
            signs,
            [
                Sign::Same,
                Sign::Same,
                Sign::Removed,
                Sign::Added,
                Sign::Added,
                Sign::Same
            ]
        );
    }

    #[test]
    fn pure_deletion_and_empty_sides() {
        let rows = side_by_side("a\nb\n", "a\n");
        assert_eq!(rows[1].change, Change::Removed);
        assert!(rows[1].new.is_none());
        assert!(side_by_side("", "").is_empty());
        assert_eq!(side_by_side("", "x").len(), 1);
    }
}
