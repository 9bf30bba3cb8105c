//! Tables of text cells from what users paste or upload: tab-separated
//! text, CSV (`,` or `;`), XLS and XLSX (the first sheet, through
//! `calamine`). Every reader stops after the rows it was asked for, and an
//! XLSX is measured inflated before it is parsed, so a small upload cannot
//! expand into unbounded memory.

use std::io::{Cursor, Read};

use calamine::{Data, DataRef, Reader, Xls, Xlsx};

use crate::{Error, Result};

/// The rows read, and whether more non-blank rows followed them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    /// The non-blank rows, at most the number asked for; cells trimmed.
    pub rows: Vec<Vec<String>>,
    /// True when further non-blank rows were left unread.
    pub cut: bool,
}

impl Table {
    fn new() -> Self {
        Self::default()
    }

    /// Adds a row unless it is blank; false once the table is full and the
    /// row was a further non-blank one (the table is then cut).
    fn push(&mut self, row: Vec<String>, max_rows: usize) -> bool {
        if row.iter().all(|c| c.is_empty()) {
            return true;
        }
        if self.rows.len() == max_rows {
            self.cut = true;
            return false;
        }
        self.rows.push(row);
        true
    }
}

/// What a file is, told from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text, cells separated by the byte (tab, `,` or `;`).
    Text,
    /// Excel 97-2003 (a compound document).
    Xls,
    /// Office Open XML (a zip archive).
    Xlsx,
}

impl Format {
    /// The format of a file's content.
    pub fn of(bytes: &[u8]) -> Self {
        if bytes.starts_with(b"PK\x03\x04") {
            Self::Xlsx
        } else if bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
            Self::Xls
        } else {
            Self::Text
        }
    }
}

/// Reads at most `max_rows` non-blank rows of a file: XLS and XLSX by their
/// signature, otherwise text (UTF-8, or UTF-16 with its byte order mark)
/// separated by tabs, `;` or `,` (the one the first line holds most of, tabs
/// first). `max_inflated` bounds the bytes an XLSX expands to. `field` names
/// the parameter in errors.
pub fn read_file(
    field: &'static str,
    bytes: &[u8],
    max_rows: usize,
    max_inflated: u64,
) -> Result<Table> {
    match Format::of(bytes) {
        Format::Xlsx => read_xlsx(field, bytes, max_rows, max_inflated),
        Format::Xls => read_xls(field, bytes, max_rows),
        Format::Text => {
            let text = decode_text(field, bytes)?;
            let delimiter = sniff_delimiter(&text);
            Ok(read_text(&text, delimiter, max_rows))
        }
    }
}

/// Reads at most `max_rows` non-blank rows of text whose cells are separated
/// by `delimiter`. Cells may be quoted (`"a;b"`, `""` for a quote) as
/// spreadsheets write them; a quote inside an unquoted cell is kept.
pub fn read_text(text: &str, delimiter: u8, max_rows: usize) -> Table {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let mut table = Table::new();
    let mut record = csv::StringRecord::new();
    // Reading a `&str` cannot fail on encoding or I/O, and flexible rows
    // cannot fail on length: an error can only end the input.
    while reader.read_record(&mut record).unwrap_or(false) {
        let row = record.iter().map(|c| c.trim().to_owned()).collect();
        if !table.push(row, max_rows) {
            break;
        }
    }
    table
}

/// The separator of a text table: a tab if the first non-blank line has one,
/// else `;` or `,`, whichever it has more of (`,` when neither).
pub fn sniff_delimiter(text: &str) -> u8 {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.contains('\t') {
        return b'\t';
    }
    let count = |c: char| first.chars().filter(|&x| x == c).count();
    if count(';') > count(',') { b';' } else { b',' }
}

fn decode_text(field: &'static str, bytes: &[u8]) -> Result<String> {
    let utf16 = |bytes: &[u8], from: fn([u8; 2]) -> u16| {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|pair| from([pair[0], pair[1]]))
            .collect();
        String::from_utf16(&units).ok()
    };
    let text = if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        utf16(rest, u16::from_le_bytes)
    } else if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        utf16(rest, u16::from_be_bytes)
    } else {
        let rest = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        std::str::from_utf8(rest).ok().map(str::to_owned)
    };
    text.ok_or_else(|| {
        Error::invalid(
            field,
            "the file is neither XLS, XLSX nor text in UTF-8 or UTF-16 (with its byte order mark)",
        )
    })
}

fn unreadable(field: &'static str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(field, format!("the {what} file cannot be read: {e}"))
}

fn read_xlsx(
    field: &'static str,
    bytes: &[u8],
    max_rows: usize,
    max_inflated: u64,
) -> Result<Table> {
    check_inflated(field, bytes, max_inflated)?;
    let mut book = Xlsx::new(Cursor::new(bytes)).map_err(|e| unreadable(field, "XLSX", e))?;
    let Some(sheet) = book.sheet_names().into_iter().next() else {
        return Ok(Table::new());
    };
    let mut cells = book
        .worksheet_cells_reader(&sheet)
        .map_err(|e| unreadable(field, "XLSX", e))?;
    let mut table = Table::new();
    let mut row: Vec<String> = Vec::new();
    let mut at_row = None;
    while let Some(cell) = cells
        .next_cell()
        .map_err(|e| unreadable(field, "XLSX", e))?
    {
        let (r, c) = cell.get_position();
        if at_row != Some(r) {
            if at_row.is_some() && !table.push(std::mem::take(&mut row), max_rows) {
                return Ok(table);
            }
            at_row = Some(r);
        }
        let c = c as usize;
        // Cells come in order; a sheet's columns are at most 16,384 wide.
        if c >= row.len() {
            row.resize(c + 1, String::new());
        }
        row[c] = text_of_ref(cell.get_value());
    }
    if at_row.is_some() {
        table.push(row, max_rows);
    }
    Ok(table)
}

/// Inflates every member of the archive without keeping it, refusing an
/// archive that expands beyond `max` bytes.
fn check_inflated(field: &'static str, bytes: &[u8], max: u64) -> Result<()> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| unreadable(field, "XLSX", e))?;
    let mut total = 0u64;
    for i in 0..archive.len() {
        let member = archive
            .by_index(i)
            .map_err(|e| unreadable(field, "XLSX", e))?;
        let left = max.saturating_sub(total);
        total += std::io::copy(&mut member.take(left + 1), &mut std::io::sink())
            .map_err(|e| unreadable(field, "XLSX", e))?;
        if total > max {
            return Err(Error::invalid(
                field,
                format!("the XLSX file expands to more than {max} bytes"),
            ));
        }
    }
    Ok(())
}

fn read_xls(field: &'static str, bytes: &[u8], max_rows: usize) -> Result<Table> {
    let mut book = Xls::new(Cursor::new(bytes)).map_err(|e| unreadable(field, "XLS", e))?;
    let Some(range) = book.worksheet_range_at(0) else {
        return Ok(Table::new());
    };
    let range = range.map_err(|e| unreadable(field, "XLS", e))?;
    let mut table = Table::new();
    for row in range.rows() {
        if !table.push(row.iter().map(text_of).collect(), max_rows) {
            break;
        }
    }
    Ok(table)
}

/// A cell as the text a user typed: whole numbers without a decimal point,
/// dates as `YYYY-MM-DD` (with the time when it is not midnight), errors empty.
fn text_of(cell: &Data) -> String {
    let text = match cell {
        Data::Int(i) => i.to_string(),
        Data::Float(f) => number(*f),
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => s.clone(),
        Data::Bool(b) => b.to_string(),
        Data::DateTime(d) => date(d),
        Data::Error(_) | Data::Empty => String::new(),
    };
    text.trim().to_owned()
}

fn text_of_ref(cell: &DataRef<'_>) -> String {
    let text = match cell {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => number(*f),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_owned(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTime(d) => date(d),
        DataRef::Error(_) | DataRef::Empty => String::new(),
    };
    text.trim().to_owned()
}

fn number(f: f64) -> String {
    // Spreadsheets keep every number as a double: 12 is 12.0.
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

fn date(d: &calamine::ExcelDateTime) -> String {
    match d.as_datetime() {
        Some(t) if t.time() == chrono::NaiveTime::MIN => t.format("%Y-%m-%d").to_string(),
        Some(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        None => number(d.as_f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rows_skip_blank_lines_and_stop_at_the_limit() {
        let table = read_text("a\tb\n\n \t \nc\td\ne\tf\n", b'\t', 2);
        assert_eq!(table.rows, vec![vec!["a", "b"], vec!["c", "d"]]);
        assert!(table.cut);
        let table = read_text("a\tb\n\nc\td\n\n", b'\t', 2);
        assert!(!table.cut, "blank lines after the last row do not cut");
    }

    #[test]
    fn cells_are_trimmed_quoted_cells_keep_separators_and_rows_may_differ_in_length() {
        let table = read_text("\" Big; one \";x\r\nplain \"quote\";y;z\n", b';', 10);
        assert_eq!(
            table.rows,
            vec![vec!["Big; one", "x"], vec!["plain \"quote\"", "y", "z"]]
        );
    }

    #[test]
    fn the_delimiter_is_told_from_the_first_line() {
        assert_eq!(sniff_delimiter("\n a\tb,c\n"), b'\t');
        assert_eq!(sniff_delimiter("a;b;c,d\n"), b';');
        assert_eq!(sniff_delimiter("a,b\n"), b',');
        assert_eq!(sniff_delimiter("one cell\n"), b',');
    }

    #[test]
    fn text_files_in_utf8_with_a_bom_and_utf16_are_read() {
        let table = read_file("file", "\u{feff}Ёлка;1\n".as_bytes(), 10, 1 << 20).unwrap();
        assert_eq!(table.rows, vec![vec!["Ёлка", "1"]]);
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend("a\tb\r\n".encode_utf16().flat_map(u16::to_le_bytes));
        let table = read_file("file", &utf16, 10, 1 << 20).unwrap();
        assert_eq!(table.rows, vec![vec!["a", "b"]]);
        let err = read_file("file", b"\xff\x00\xfe", 10, 1 << 20).unwrap_err();
        assert!(err.to_string().contains("`file`"), "{err}");
    }

    #[test]
    fn a_damaged_spreadsheet_is_an_invalid_parameter() {
        let err = read_file("file_id", b"PK\x03\x04garbage", 10, 1 << 20).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
        let err = read_file(
            "file_id",
            &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0],
            10,
            1 << 20,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    }

    #[test]
    fn numbers_read_as_typed() {
        assert_eq!(number(12.0), "12");
        assert_eq!(number(-3.0), "-3");
        assert_eq!(number(7.25), "7.25");
    }
}

#[cfg(test)]
mod xlsx_tests {
    use rust_xlsxwriter::Workbook;

    use super::*;

    fn workbook(rows: &[&[&str]]) -> Vec<u8> {
        let mut book = Workbook::new();
        let sheet = book.add_worksheet();
        for (r, row) in rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                let (r, c) = (u32::try_from(r).unwrap(), u16::try_from(c).unwrap());
                match cell.parse::<f64>() {
                    Ok(n) => sheet.write_number(r, c, n).unwrap(),
                    Err(_) if cell.is_empty() => sheet,
                    Err(_) => sheet.write_string(r, c, *cell).unwrap(),
                };
            }
        }
        book.save_to_buffer().unwrap()
    }

    #[test]
    fn xlsx_rows_read_with_gaps_blank_rows_and_the_limit() {
        let bytes = workbook(&[&["Truck", "", "400"], &[], &["Bus", "7.5"], &["Car"]]);
        assert_eq!(Format::of(&bytes), Format::Xlsx);
        let table = read_file("file", &bytes, 2, 1 << 20).unwrap();
        assert_eq!(
            table.rows,
            vec![vec!["Truck", "", "400"], vec!["Bus", "7.5"]]
        );
        assert!(table.cut);
        let table = read_file("file", &bytes, 3, 1 << 20).unwrap();
        assert!(!table.cut);
        assert_eq!(table.rows.len(), 3);
    }

    #[test]
    fn an_xlsx_expanding_beyond_the_bound_is_refused_before_it_is_parsed() {
        // Distinct cells (an XLSX keeps one copy of equal strings), each
        // within Excel's 32,767 characters, compressing to almost nothing.
        let cells: Vec<[String; 1]> = (0..40)
            .map(|i| [format!("{i}{}", "x".repeat(30_000))])
            .collect();
        let cells: Vec<[&str; 1]> = cells.iter().map(|[c]| [c.as_str()]).collect();
        let rows: Vec<&[&str]> = cells.iter().map(|c| &c[..]).collect();
        let bytes = workbook(&rows);
        assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
        let err = read_file("file_id", &bytes, 500, 1_000_000).unwrap_err();
        assert!(
            err.to_string()
                .contains("expands to more than 1000000 bytes"),
            "{err}"
        );
        assert_eq!(
            read_file("file_id", &bytes, 500, 10_000_000)
                .unwrap()
                .rows
                .len(),
            40
        );
    }
}
