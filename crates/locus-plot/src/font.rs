//! A 5×9 bitmap font for printable ASCII (32..=126), drawn for this crate.
//!
//! Each glyph is 5 pixels wide and 9 tall: rows 0–6 hold capitals, digits and ascenders (the
//! baseline is under row 6), rows 7–8 hold descenders (`g j p q y , ;`). The source below is
//! kept human-readable: bands of up to 8 consecutive characters, 9 rows each, one 5-character
//! group per glyph (`#` = ink, `.` = paper); lines starting with `;` name the band's characters.
//!
//! ```text
//!  glyph cell (scale 1)        advance = 6 px (5 + 1 space), line = 10 px
//!  .###.  row 0
//!  #...#
//!  #...#
//!  #####
//!  #...#
//!  #...#
//!  #...#  row 6   ── baseline
//!  .....  row 7   descender
//!  .....  row 8
//! ```

use std::sync::OnceLock;

/// Glyph width in font pixels.
pub const GLYPH_W: u32 = 5;
/// Glyph height in font pixels, descender included.
pub const GLYPH_H: u32 = 9;
/// Height of capitals and digits in font pixels (rows above the baseline).
pub const CAP_H: u32 = 7;
/// Horizontal advance per character in font pixels.
pub const ADVANCE: u32 = GLYPH_W + 1;

const FIRST: u8 = b' ';
const LAST: u8 = b'~';
const COUNT: usize = (LAST - FIRST + 1) as usize;

/// One glyph: 9 rows, bit 4 of each row is the leftmost pixel.
pub type Glyph = [u8; GLYPH_H as usize];

const SOURCE: &str = r#"
; space ! " # $ % & '
..... ..#.. .#.#. .#.#. ..#.. ##... .##.. ..#..
..... ..#.. .#.#. .#.#. .#### ##..# #..#. ..#..
..... ..#.. ..... ##### #.#.. ...#. #.#.. .....
..... ..#.. ..... .#.#. .###. ..#.. .#... .....
..... ..#.. ..... ##### ..#.# .#... #.#.# .....
..... ..... ..... .#.#. ####. #..## #..#. .....
..... ..#.. ..... .#.#. ..#.. ...## .##.# .....
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; ( ) * + , - . /
...#. .#... ..... ..... ..... ..... ..... .....
..#.. ..#.. ..#.. ..#.. ..... ..... ..... ....#
.#... ...#. #.#.# ..#.. ..... ..... ..... ...#.
.#... ...#. .###. ##### ..... ##### ..... ..#..
.#... ...#. #.#.# ..#.. ..... ..... ..... .#...
..#.. ..#.. ..#.. ..#.. .##.. ..... .##.. #....
...#. .#... ..... ..... .##.. ..... .##.. .....
..... ..... ..... ..... ..#.. ..... ..... .....
..... ..... ..... ..... .#... ..... ..... .....
; 0 1 2 3 4 5 6 7
.###. ..#.. .###. ##### ...#. ##### ..##. #####
#...# .##.. #...# ...#. ..##. #.... .#... ....#
#..## ..#.. ....# ..#.. .#.#. ####. #.... ...#.
#.#.# ..#.. ...#. ...#. #..#. ....# ####. ..#..
##..# ..#.. ..#.. ....# ##### ....# #...# .#...
#...# ..#.. .#... #...# ...#. #...# #...# .#...
.###. .###. ##### .###. ...#. .###. .###. .#...
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; 8 9 : ; < = > ?
.###. .###. ..... ..... ...#. ..... .#... .###.
#...# #...# .##.. .##.. ..#.. ..... ..#.. #...#
#...# #...# .##.. .##.. .#... ##### ...#. ....#
.###. .#### ..... ..... #.... ..... ....# ...#.
#...# ....# .##.. .##.. .#... ##### ...#. ..#..
#...# ...#. .##.. .##.. ..#.. ..... ..#.. .....
.###. .##.. ..... ..#.. ...#. ..... .#... ..#..
..... ..... ..... .#... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; @ A B C D E F G
.###. .###. ####. .###. ###.. ##### ##### .###.
#...# #...# #...# #...# #..#. #.... #.... #...#
....# #...# #...# #.... #...# #.... #.... #....
.##.# ##### ####. #.... #...# ####. ####. #.###
#.#.# #...# #...# #.... #...# #.... #.... #...#
#.#.# #...# #...# #...# #..#. #.... #.... #...#
.###. #...# ####. .###. ###.. ##### #.... .####
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; H I J K L M N O
#...# .###. ..### #...# #.... #...# #...# .###.
#...# ..#.. ...#. #..#. #.... ##.## #...# #...#
#...# ..#.. ...#. #.#.. #.... #.#.# ##..# #...#
##### ..#.. ...#. ##... #.... #.#.# #.#.# #...#
#...# ..#.. ...#. #.#.. #.... #...# #..## #...#
#...# ..#.. #..#. #..#. #.... #...# #...# #...#
#...# .###. .##.. #...# ##### #...# #...# .###.
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; P Q R S T U V W
####. .###. ####. .#### ##### #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
#...# #...# #...# #.... ..#.. #...# #...# #...#
####. #...# ####. .###. ..#.. #...# #...# #.#.#
#.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.#
#.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.#
#.... .##.# #...# ####. ..#.. .###. ..#.. .#.#.
..... ..... ..... ..... ..... ..... ..... .....
..... ..... ..... ..... ..... ..... ..... .....
; X Y Z [ \ ] ^ _
#...# #...# ##### .###. ..... .###. ..#.. .....
#...# #...# ....# .#... #.... ...#. .#.#. .....
.#.#. .#.#. ...#. .#... .#... ...#. #...# .....
..#.. ..#.. ..#.. .#... ..#.. ...#. ..... .....
.#.#. ..#.. .#... .#... ...#. ...#. ..... .....
#...# ..#.. #.... .#... ....# ...#. ..... .....
#...# ..#.. ##### .###. ..... .###. ..... .....
..... ..... ..... ..... ..... ..... ..... #####
..... ..... ..... ..... ..... ..... ..... .....
; ` a b c d e f g
.#... ..... #.... ..... ....# ..... ..##. .....
..#.. ..... #.... ..... ....# ..... .#..# .....
..... .###. #.##. .###. .##.# .###. .#... .####
..... ....# ##..# #.... #..## #...# ###.. #...#
..... .#### #...# #.... #...# ##### .#... #...#
..... #...# #...# #...# #...# #.... .#... #...#
..... .#### ####. .###. .#### .###. .#... .####
..... ..... ..... ..... ..... ..... ..... ....#
..... ..... ..... ..... ..... ..... ..... .###.
; h i j k l m n o
#.... ..#.. ...#. #.... .##.. ..... ..... .....
#.... ..... ..... #.... ..#.. ..... ..... .....
#.##. .##.. ..##. #..#. ..#.. ##.#. #.##. .###.
##..# ..#.. ...#. #.#.. ..#.. #.#.# ##..# #...#
#...# ..#.. ...#. ##... ..#.. #.#.# #...# #...#
#...# ..#.. ...#. #.#.. ..#.. #.#.# #...# #...#
#...# .###. ...#. #..#. .###. #.#.# #...# .###.
..... ..... #..#. ..... ..... ..... ..... .....
..... ..... .##.. ..... ..... ..... ..... .....
; p q r s t u v w
..... ..... ..... ..... .#... ..... ..... .....
..... ..... ..... ..... .#... ..... ..... .....
####. .#### #.##. .#### ###.. #...# #...# #...#
#...# #...# ##..# #.... .#... #...# #...# #...#
#...# #...# #.... .###. .#... #...# #...# #.#.#
#...# #...# #.... ....# .#..# #..## .#.#. #.#.#
####. .#### #.... ####. ..##. .##.# ..#.. .#.#.
#.... ....# ..... ..... ..... ..... ..... .....
#.... ....# ..... ..... ..... ..... ..... .....
; x y z { | } ~
..... ..... ..... ...## ..#.. ##... .....
..... ..... ..... ..#.. ..#.. ..#.. .....
#...# #...# ##### ..#.. ..#.. ..#.. .#...
.#.#. #...# ...#. ##... ..#.. ...## #.#.#
..#.. #...# ..#.. ..#.. ..#.. ..#.. ...#.
.#.#. #...# .#... ..#.. ..#.. ..#.. .....
#...# .#### ##### ...## ..#.. ##... .....
..... ....# ..... ..... ..... ..... .....
..... .###. ..... ..... ..... ..... .....
"#;

/// Parses [`SOURCE`]. Returns `None` if the source is malformed (a test checks it is not).
fn parse(src: &str) -> Option<Vec<Glyph>> {
    let mut glyphs: Vec<Glyph> = Vec::with_capacity(COUNT);
    let mut band_start = 0usize;
    let mut row = 0usize;
    for line in src.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let groups: Vec<&str> = line.split_whitespace().collect();
        if row == 0 {
            band_start = glyphs.len();
            glyphs.extend(std::iter::repeat_n([0u8; GLYPH_H as usize], groups.len()));
        } else if groups.len() != glyphs.len() - band_start {
            return None;
        }
        for (i, g) in groups.iter().enumerate() {
            if g.len() != GLYPH_W as usize {
                return None;
            }
            let mut bits = 0u8;
            for c in g.bytes() {
                bits = (bits << 1)
                    | match c {
                        b'#' => 1,
                        b'.' => 0,
                        _ => return None,
                    };
            }
            glyphs[band_start + i][row] = bits;
        }
        row = (row + 1) % GLYPH_H as usize;
    }
    (row == 0 && glyphs.len() == COUNT).then_some(glyphs)
}

fn table() -> &'static [Glyph] {
    static TABLE: OnceLock<Vec<Glyph>> = OnceLock::new();
    // The source is a constant checked by the `font_source_is_complete` test; an empty table
    // (never expected) would draw blank text rather than fail.
    TABLE.get_or_init(|| parse(SOURCE).unwrap_or_default())
}

/// The glyph of `c`; characters outside printable ASCII are drawn as `?`.
pub fn glyph(c: char) -> Glyph {
    let code = if (FIRST as u32..=LAST as u32).contains(&(c as u32)) {
        c as u8
    } else {
        b'?'
    };
    table()
        .get(usize::from(code - FIRST))
        .copied()
        .unwrap_or([0; GLYPH_H as usize])
}

/// Width in font pixels of `text` on one line (no trailing space).
pub fn text_width(text: &str) -> u32 {
    let n = text.chars().count() as u32;
    if n == 0 { 0 } else { n * ADVANCE - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn font_source_is_complete() {
        let t = parse(SOURCE).expect("font source parses");
        assert_eq!(t.len(), COUNT);
        // Every printable glyph but the space has ink, and no two glyphs are the same.
        for (i, g) in t.iter().enumerate().skip(1) {
            assert!(
                g.iter().any(|&r| r != 0),
                "glyph {:?} is blank",
                (i as u8 + FIRST) as char
            );
            for (j, h) in t.iter().enumerate().skip(i + 1) {
                assert_ne!(
                    g,
                    h,
                    "{:?} and {:?} are drawn the same",
                    (i as u8 + FIRST) as char,
                    (j as u8 + FIRST) as char
                );
            }
        }
        assert_eq!(t[0], [0; GLYPH_H as usize], "space is blank");
    }

    #[test]
    fn glyph_rows_match_the_drawing() {
        // 'A' top row .###. and bar #####.
        let a = glyph('A');
        assert_eq!(a[0], 0b01110);
        assert_eq!(a[3], 0b11111);
        // Descenders only in the letters that have them.
        assert_ne!(glyph('g')[8], 0);
        assert_eq!(glyph('a')[7] | glyph('a')[8], 0);
        // Outside ASCII: '?'.
        assert_eq!(glyph('é'), glyph('?'));
        assert_eq!(text_width(""), 0);
        assert_eq!(text_width("ab"), 11);
    }

    #[test]
    fn malformed_source_is_rejected() {
        assert!(parse("..... .....\n").is_none());
        assert!(parse("..x..\n").is_none());
    }
}
