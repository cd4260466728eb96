//! Text that fits a terminal: word wrapping that never splits a word in the
//! middle, and tables with one column per arm that are cut into several
//! tables (each repeating the row labels) when the arms do not fit side by
//! side. Widths are display widths (`σ`, `…`, `×` count as one column).

use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use pinsight_term::{self as term, Wrap};

/// The width used when the terminal's is unknown (not a terminal, or a
/// terminal reporting 0 columns).
pub const DEFAULT_WIDTH: usize = pinsight_term::DEFAULT_WIDTH;

/// Narrowest text width the renderers aim for; narrower terminals get this.
pub const MIN_WIDTH: usize = 40;

/// A terminal's reported width as the renderers use it: 0 (unknown) and
/// absurdly narrow values become [`DEFAULT_WIDTH`] / [`MIN_WIDTH`].
pub fn effective_width(columns: Option<usize>) -> usize {
    match columns {
        None | Some(0) => DEFAULT_WIDTH,
        Some(w) => w.max(MIN_WIDTH),
    }
}

/// Display width of `s`.
pub fn width(s: &str) -> usize {
    term::display_width(s)
}

/// `text` wrapped into lines of at most `max` columns with the one
/// wrapper ([`pinsight_term::wrap`]): breaks at spaces, a unit kept with its
/// number, a word wider than `max` (a long CPU list) broken at punctuation.
fn cells(text: &str, max: usize) -> Vec<String> {
    term::wrap(text, Wrap::new(max).break_long_words())
}

/// `first` then `text` wrapped to `max`, continuation lines indented by
/// `indent` spaces; each line ends with a newline.
pub fn hanging(first: &str, text: &str, indent: usize, max: usize) -> String {
    let avail = max.saturating_sub(indent.max(width(first))).max(10);
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for (i, l) in cells(text, avail).iter().enumerate() {
        out.push_str(if i == 0 { first } else { &pad });
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// One row of a [`grid`]: a label and one cell per column; `right`
/// right-aligns the cells (numbers).
pub struct Row {
    pub label: String,
    pub cells: Vec<String>,
    pub right: bool,
}

/// Columns get at least this many columns of text when they need it.
const MIN_COLUMN: usize = 14;
/// The label column never takes more than this.
const MAX_LABEL: usize = 24;

/// A table with row labels down the left and one column per entry of
/// `heads`, fitting `max` columns: when the columns do not fit side by
/// side they are split over several tables, each repeating the labels.
/// Cells are wrapped at word boundaries (`cells`).
pub fn grid(corner: &str, heads: &[String], rows: &[Row], max: usize) -> String {
    let label_natural = rows
        .iter()
        .map(|r| width(&r.label))
        .chain([width(corner)])
        .max()
        .unwrap_or(0);
    let label_w = label_natural.clamp(1, MAX_LABEL);
    // A column is never narrower than its longest unbreakable piece, so
    // no word is ever cut (as long as the terminal is wide enough at all).
    let unbreakable: Vec<usize> = (0..heads.len())
        .map(|c| {
            rows.iter()
                .map(|r| r.cells.get(c).map_or(0, |s| term::longest_unbreakable(s)))
                .chain([term::longest_unbreakable(&heads[c])])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let natural: Vec<usize> = (0..heads.len())
        .map(|c| {
            rows.iter()
                .map(|r| r.cells.get(c).map_or(0, |s| longest_line(s)))
                .chain([longest_line(&heads[c])])
                .max()
                .unwrap_or(1)
                .max(1)
        })
        .collect();
    // Borders: "│ " before every column, " │" after the last, " │ " between.
    let avail_for = |k: usize| max.saturating_sub(label_w + 3 * (k + 1) + 1);
    let mut out = String::new();
    let mut start = 0;
    while start < heads.len() {
        let mut end = start + 1;
        let mut widths = fit(&natural[start..end], &unbreakable[start..end], avail_for(1))
            .unwrap_or_else(|| vec![avail_for(1).max(unbreakable[start])]);
        while end < heads.len() {
            match fit(
                &natural[start..end + 1],
                &unbreakable[start..end + 1],
                avail_for(end + 1 - start),
            ) {
                Some(w) => {
                    widths = w;
                    end += 1;
                }
                None => break,
            }
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&draw(
            corner,
            &heads[start..end],
            rows,
            start,
            label_w,
            &widths,
        ));
        out.push('\n');
        start = end;
    }
    out
}

fn longest_line(s: &str) -> usize {
    s.split('\n').map(width).max().unwrap_or(0)
}

/// Column widths for columns of natural widths `natural` sharing `avail`,
/// each at least its longest unbreakable piece (`at_least`), or `None` when
/// even their minimums do not fit.
fn fit(natural: &[usize], at_least: &[usize], avail: usize) -> Option<Vec<usize>> {
    let mut w: Vec<usize> = natural
        .iter()
        .zip(at_least)
        .map(|(&n, &u)| n.min(MIN_COLUMN).max(u))
        .collect();
    let used: usize = w.iter().sum();
    if used > avail {
        return None;
    }
    let mut left = avail - used;
    // Water filling: the narrowest column still short of its natural width
    // grows first, so one long cell does not starve the others.
    while left > 0 {
        let Some(i) = (0..w.len())
            .filter(|&i| w[i] < natural[i])
            .min_by_key(|&i| w[i])
        else {
            break;
        };
        w[i] += 1;
        left -= 1;
    }
    Some(w)
}

fn draw(
    corner: &str,
    heads: &[String],
    rows: &[Row],
    offset: usize,
    label_w: usize,
    widths: &[usize],
) -> String {
    let cell = |text: &str, w: usize| cells(text, w).join("\n");
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Disabled);
    let mut head = vec![Cell::new(cell(corner, label_w))];
    head.extend(
        heads
            .iter()
            .zip(widths)
            .map(|(h, &w)| Cell::new(cell(h, w))),
    );
    t.set_header(head);
    for r in rows {
        let mut row = vec![Cell::new(cell(&r.label, label_w))];
        for (i, &w) in widths.iter().enumerate() {
            let text = r.cells.get(offset + i).map_or("", String::as_str);
            let mut c = Cell::new(cell(text, w));
            if r.right {
                c = c.set_alignment(CellAlignment::Right);
            }
            row.push(c);
        }
        t.add_row(row);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_never_split_when_they_fit() {
        let lines = cells("1.07× faster (95% CI 5.1–8.7%), p = 0.003", 12);
        assert!(lines.iter().all(|l| width(l) <= 12), "{lines:?}");
        assert_eq!(lines.join(" "), "1.07× faster (95% CI 5.1–8.7%), p = 0.003");
    }

    #[test]
    fn units_stay_with_their_numbers() {
        let lines = cells("3.16 ms ± 1.77 ms", 14);
        assert_eq!(lines, vec!["3.16 ms ±", "1.77 ms"]);
        assert_eq!(term::longest_unbreakable("3.16 ms ± 1.77 ms"), 7);
        // A unit-like word after a non-number is an ordinary word.
        assert_eq!(cells("in ms", 2), vec!["in", "ms"]);
    }

    #[test]
    fn long_lists_break_after_punctuation() {
        let lines = cells("OMP_PLACES={0},{1},{2},{3},{4},{5}", 14);
        assert!(lines.iter().all(|l| width(l) <= 14), "{lines:?}");
        assert_eq!(lines[0], "OMP_PLACES=");
        assert!(lines[1].ends_with(','), "{lines:?}");
    }

    #[test]
    fn columns_are_never_narrower_than_an_unbreakable_piece() {
        assert_eq!(
            term::longest_unbreakable("RAYON_NUM_THREADS=2 OMP_PLACES={0},{1}"),
            18
        );
        let rows = vec![Row {
            label: "Exports".into(),
            cells: vec!["RAYON_NUM_THREADS=2".into(); 4],
            right: false,
        }];
        let heads: Vec<String> = (0..4).map(|i| format!("arm{i}")).collect();
        let out = grid("Arm", &heads, &rows, 80);
        assert!(
            !out.contains("THREAD\n") && !out.contains("RAYON_NUM_THREAD "),
            "{out}"
        );
        assert_eq!(out.matches("RAYON_NUM_THREADS=").count(), 4, "{out}");
    }

    #[test]
    fn zero_columns_means_unknown() {
        assert_eq!(effective_width(Some(0)), 80);
        assert_eq!(effective_width(None), 80);
        assert_eq!(effective_width(Some(120)), 120);
        assert_eq!(effective_width(Some(5)), MIN_WIDTH);
    }

    #[test]
    fn many_columns_become_several_tables_that_fit() {
        let heads: Vec<String> = (0..9)
            .map(|i| format!("kind-set:E-core@powersave{i}"))
            .collect();
        let rows = vec![Row {
            label: "Time (mean ± σ)".into(),
            cells: (0..9).map(|_| "1.234 s ± 12.3 ms".to_string()).collect(),
            right: true,
        }];
        let out = grid("", &heads, &rows, 80);
        for l in out.lines() {
            assert!(width(l) <= 80, "{} columns: {l}", width(l));
        }
        for i in 0..9 {
            assert!(out.contains(&format!("E-core@powersave{i}")), "{out}");
        }
    }
}
