//! Splitting a setkey file into tokens with their positions.
//!
//! setkey's own lexer (ipsec-tools `token.l`) is stateful; ours is not:
//! a token is a `;`, a `"quoted string"` (which may span lines, as
//! `\"[^"]*\"` does in `token.l`), or a word: a maximal run of characters
//! that are none of whitespace, `;`, `"` and `#`. Addresses such as
//! `10.0.0.0/8[any]` and policy rules such as `esp/tunnel/A-B/require` are
//! single words that the parser takes apart. `#` starts a comment that runs
//! to the end of the line (setkey(8): "Lines starting with hash signs (‘#’)
//! are treated as comment lines"; `token.l` also accepts one after a
//! token).

use crate::error::{ErrorKind, ParseError, Pos};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A run of non-separator characters.
    Word,
    /// A double-quoted string; `text` is its content without the quotes.
    Quoted,
    /// The statement terminator `;`.
    Semi,
}

/// One token and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    pub pos: Pos,
    /// Where the token ends (the position just after its last character).
    pub end: Pos,
}

impl Token<'_> {
    /// The position of the `n`th character of the token's text (for
    /// pointing inside a word; quoted strings add one for the quote).
    pub fn pos_at(&self, char_offset: usize) -> Pos {
        let extra = usize::from(self.kind == TokenKind::Quoted);
        let offset = u32::try_from(char_offset + extra).unwrap_or(u32::MAX);
        Pos {
            line: self.pos.line,
            column: self.pos.column.saturating_add(offset),
        }
    }

    /// The position of byte `byte_offset` of the token's text.
    pub fn pos_at_byte(&self, byte_offset: usize) -> Pos {
        let prefix = self.text.get(..byte_offset).unwrap_or(self.text);
        self.pos_at(prefix.chars().count())
    }
}

/// Tokenize `text`; the error is an unterminated string.
pub(crate) fn tokenize<'a>(file: &str, text: &'a str) -> Result<Vec<Token<'a>>, ParseError> {
    let mut tokens = Vec::new();
    let mut cursor = Cursor {
        text,
        at: 0,
        pos: Pos { line: 1, column: 1 },
    };
    while let Some(c) = cursor.peek() {
        let start = cursor.pos;
        let from = cursor.at;
        match c {
            c if c.is_whitespace() => {
                cursor.bump();
            }
            '#' => {
                while cursor.peek().is_some_and(|c| c != '\n') {
                    cursor.bump();
                }
            }
            ';' => {
                cursor.bump();
                tokens.push(Token {
                    kind: TokenKind::Semi,
                    text: &text[from..cursor.at],
                    pos: start,
                    end: cursor.pos,
                });
            }
            '"' => {
                cursor.bump();
                let content_from = cursor.at;
                loop {
                    match cursor.bump() {
                        Some('"') => break,
                        Some(_) => {}
                        None => {
                            return Err(ParseError::new(file, start, ErrorKind::UnterminatedString))
                        }
                    }
                }
                tokens.push(Token {
                    kind: TokenKind::Quoted,
                    text: &text[content_from..cursor.at - 1],
                    pos: start,
                    end: cursor.pos,
                });
            }
            _ => {
                while cursor
                    .peek()
                    .is_some_and(|c| !c.is_whitespace() && !matches!(c, ';' | '"' | '#'))
                {
                    cursor.bump();
                }
                tokens.push(Token {
                    kind: TokenKind::Word,
                    text: &text[from..cursor.at],
                    pos: start,
                    end: cursor.pos,
                });
            }
        }
    }
    Ok(tokens)
}

/// The end of the input, for "expected ... at end of input".
pub(crate) fn end_pos(text: &str) -> Pos {
    let mut pos = Pos { line: 1, column: 1 };
    for c in text.chars() {
        pos = advance(pos, c);
    }
    pos
}

fn advance(pos: Pos, c: char) -> Pos {
    if c == '\n' {
        Pos {
            line: pos.line.saturating_add(1),
            column: 1,
        }
    } else {
        Pos {
            line: pos.line,
            column: pos.column.saturating_add(1),
        }
    }
}

struct Cursor<'a> {
    text: &'a str,
    /// Byte offset.
    at: usize,
    pos: Pos,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        self.pos = advance(self.pos, c);
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(TokenKind, &str, u32, u32)> {
        tokenize("t", text)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text, t.pos.line, t.pos.column))
            .collect()
    }

    #[test]
    fn words_strings_comments_and_positions() {
        use TokenKind::*;
        let toks = kinds("# c\nadd 10.0.0.1[500] \"a b\nc\";# x\n  flush;");
        assert_eq!(
            toks,
            vec![
                (Word, "add", 2, 1),
                (Word, "10.0.0.1[500]", 2, 5),
                (Quoted, "a b\nc", 2, 19),
                (Semi, ";", 3, 3),
                (Word, "flush", 4, 3),
                (Semi, ";", 4, 8),
            ]
        );
    }

    #[test]
    fn unterminated_string_points_at_the_quote() {
        let e = tokenize("f", "add\n  \"abc").unwrap_err();
        assert_eq!((e.line, e.column), (2, 3));
        assert_eq!(e.kind, ErrorKind::UnterminatedString);
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let toks = kinds("é x");
        assert_eq!(toks[1].3, 3);
        assert_eq!(end_pos("ab\ncd"), Pos { line: 2, column: 3 });
    }
}
