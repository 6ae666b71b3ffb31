//! CSV as researchers bring it (`--enqueue` files, a run's `trials.csv` to warm-start from, a
//! table written by pandas or Python's csv module): the csv crate's reader, so that quoted fields
//! (`"relu"`, `"a,b"`, a doubled `""` inside) read as every CSV writer means them, with each row's
//! line for error messages. Blank lines are skipped; fields are trimmed.

/// One row: its fields and the line of the text it starts on (1 for the first).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The line it starts on.
    pub line: usize,
    /// Its fields, trimmed.
    pub fields: Vec<String>,
}

/// The rows of `text`, or what makes it unreadable (a quote left open, text that is not UTF-8).
pub fn rows(text: &str) -> Result<Vec<Row>, String> {
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| e.to_string())?;
        let fields: Vec<String> = record.iter().map(str::to_string).collect();
        if fields.iter().all(String::is_empty) {
            continue; // a line of blanks
        }
        // The record starts where the reader left the one before, blank lines included.
        let start = record.position().map_or(0, |p| p.byte() as usize).min(text.len());
        let blank = text[start..].len() - text[start..].trim_start_matches(['\n', '\r']).len();
        let line = text[..start + blank].matches('\n').count() + 1;
        rows.push(Row { line, fields });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_blank_lines_and_line_numbers() {
        let text = "a,b\n\n1,\"x,y\"\n \n\"3\",\"say \"\"hi\"\"\"\r\n5\n";
        let rows = rows(text).unwrap();
        let got: Vec<(usize, Vec<&str>)> =
            rows.iter().map(|r| (r.line, r.fields.iter().map(String::as_str).collect())).collect();
        assert_eq!(got, [(1, vec!["a", "b"]), (3, vec!["1", "x,y"]), (5, vec!["3", "say \"hi\""]), (6, vec!["5"])]);
        assert_eq!(super::rows("").unwrap(), []);
    }
}
