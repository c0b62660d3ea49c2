//! The aligned tables the listing commands print (`ps`, `pool ls`, `snapshot ls`): columns
//! as wide as their widest cell, two spaces apart, no trailing blanks.

use std::fmt::Write as _;

/// Aligned columns of `cells` under `headers`.
pub fn table<const N: usize>(headers: [&str; N], cells: &[[String; N]]) -> String {
    let mut widths = headers.map(str::len);
    for row in cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = headers.map(str::to_string);
    for row in std::iter::once(&header).chain(cells) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(widths) {
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
