//! A write's messages as columns: what an intake body's lines are parsed
//! into, and what a write's WAL encodings, dedup keys and memtable batches
//! are made from, with no [`Message`] per line.
//!
//! Each fixed field is a vector of its values. The inner entries of every
//! row lie in blocks ([`Entries`]), each naming its inner column by an id of the
//! write's [`Names`]: a name is looked up in a map of the write's own,
//! copied and hashed once per write instead of once per message. A row's
//! entries keep a `Message`'s order (discrete inputs, discrete outputs,
//! inputs, states, each sorted as `Message` sorts them), so its WAL
//! encoding is byte for byte the postcard of the `Message` it stands for.

use std::collections::HashMap;

use schemas::columns::InnerKind;
use schemas::{GpsFixType, Message, MnType, Name, StateValue, TrackerId};

use crate::batch::{day_of, name_key};

/// The fields of one message but its tracker and inner lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scalars<'a> {
    pub(crate) message_time_ms: i64,
    pub(crate) server_time_ms: i64,
    pub(crate) gps_fix_type: Option<GpsFixType>,
    pub(crate) lat: Option<f64>,
    pub(crate) lng: Option<f64>,
    pub(crate) speed: Option<f64>,
    pub(crate) alt: Option<i32>,
    pub(crate) satellites: Option<i32>,
    pub(crate) heading: Option<i32>,
    pub(crate) precision: Option<i32>,
    pub(crate) hdop: Option<f64>,
    pub(crate) pdop: Option<f64>,
    pub(crate) event_id: Option<i64>,
    pub(crate) mn_name: Option<&'a str>,
    pub(crate) mn_roaming: Option<i32>,
    pub(crate) mn_code: Option<i64>,
    pub(crate) mn_csq: Option<i32>,
    pub(crate) mn_type: Option<MnType>,
    pub(crate) flags: Option<i64>,
}

impl<'a> Scalars<'a> {
    fn of(m: &'a Message) -> Self {
        Self {
            message_time_ms: m.message_time_ms,
            server_time_ms: m.server_time_ms,
            gps_fix_type: m.gps_fix_type,
            lat: m.lat,
            lng: m.lng,
            speed: m.speed,
            alt: m.alt,
            satellites: m.satellites,
            heading: m.heading,
            precision: m.precision,
            hdop: m.hdop,
            pdop: m.pdop,
            event_id: m.event_id,
            mn_name: m.mn_name.as_deref(),
            mn_roaming: m.mn_roaming,
            mn_code: m.mn_code,
            mn_csq: m.mn_csq,
            mn_type: m.mn_type,
            flags: m.flags,
        }
    }
}

/// A message's inner lists, each sorted as `Message` keeps them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InnerLists<'a> {
    pub(crate) discrete_inputs: &'a [(u16, u8)],
    pub(crate) discrete_outputs: &'a [(u16, u8)],
    pub(crate) inputs: &'a [(Name, f64)],
    pub(crate) states: &'a [(Name, StateValue)],
}

/// An inner column of a write.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InnerName {
    pub(crate) kind: InnerKind,
    /// A discrete column's number (0 for the others).
    pub(crate) number: u16,
    /// The name after the period: a discrete column's number spelled.
    pub(crate) name: Name,
    /// The [`name_key`] of its storage name.
    pub(crate) key: u64,
}

impl InnerName {
    /// Its storage name (`inputs.fuel`, `discrete_inputs.2`).
    pub(crate) fn storage_name(&self) -> String {
        self.kind.column(&self.name)
    }
}

/// The inner columns a write names, each once, by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    list: Vec<InnerName>,
    /// Inputs' and states' ids by name.
    named: [HashMap<Name, u32, foldhash::fast::RandomState>; 2],
    /// Discrete inputs' and outputs' ids by number.
    discrete: [HashMap<u16, u32, foldhash::fast::RandomState>; 2],
}

impl Names {
    /// The column `id` names.
    pub(crate) fn get(&self, id: u32) -> &InnerName {
        &self.list[id as usize]
    }

    /// How many columns.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    fn named(&mut self, kind: InnerKind, name: &str) -> u32 {
        let slot = usize::from(kind == InnerKind::States);
        if let Some(&id) = self.named[slot].get(name) {
            return id;
        }
        let id = self.add(kind, 0, Name::from(name));
        self.named[slot].insert(Name::from(name), id);
        id
    }

    fn discrete(&mut self, kind: InnerKind, number: u16) -> u32 {
        let slot = usize::from(kind == InnerKind::DiscreteOutputs);
        if let Some(&id) = self.discrete[slot].get(&number) {
            return id;
        }
        let id = self.add(kind, number, Name::from(itoa::Buffer::new().format(number)));
        self.discrete[slot].insert(number, id);
        id
    }

    /// Forgets every name, keeping the room.
    fn clear(&mut self) {
        self.list.clear();
        self.named.iter_mut().for_each(HashMap::clear);
        self.discrete.iter_mut().for_each(HashMap::clear);
    }

    fn add(&mut self, kind: InnerKind, number: u16, name: Name) -> u32 {
        // A write holds far fewer than 2^32 entries, so fewer names.
        let id = self.list.len() as u32;
        let key = name_key(&kind.column(&name));
        self.list.push(InnerName {
            kind,
            number,
            name,
            key,
        });
        id
    }
}

/// The value of an inner entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InnerValue {
    Discrete(u8),
    Number(f64),
    State(StateValue),
}

/// A write's messages, row by row in the order given (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub(crate) tracker: Vec<i64>,
    pub(crate) message_time: Vec<i64>,
    pub(crate) server_time: Vec<i64>,
    pub(crate) gps_fix_type: Vec<Option<GpsFixType>>,
    pub(crate) lat: Vec<Option<f64>>,
    pub(crate) lng: Vec<Option<f64>>,
    pub(crate) speed: Vec<Option<f64>>,
    pub(crate) alt: Vec<Option<i32>>,
    pub(crate) satellites: Vec<Option<i32>>,
    pub(crate) heading: Vec<Option<i32>>,
    pub(crate) precision: Vec<Option<i32>>,
    pub(crate) hdop: Vec<Option<f64>>,
    pub(crate) pdop: Vec<Option<f64>>,
    pub(crate) event_id: Vec<Option<i64>>,
    /// Each row's `mn_name`: where it lies in `text`, or `None`.
    mn_name: Vec<Option<(u32, u32)>>,
    text: String,
    pub(crate) mn_roaming: Vec<Option<i32>>,
    pub(crate) mn_code: Vec<Option<i64>>,
    pub(crate) mn_csq: Vec<Option<i32>>,
    pub(crate) mn_type: Vec<Option<MnType>>,
    pub(crate) flags: Vec<Option<i64>>,
    /// Every row's inner entries.
    entries: Entries,
    pub(crate) names: Names,
}

impl Rows {
    /// Room for about `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        let mut empty = Self::default();
        empty.reserve(rows);
        empty
    }

    /// Empties it, keeping its memory for the next rows: a pooled write's
    /// columns are written over where they are, not faulted in afresh
    /// (decision 147).
    pub fn clear(&mut self) {
        let Self {
            tracker,
            message_time,
            server_time,
            gps_fix_type,
            lat,
            lng,
            speed,
            alt,
            satellites,
            heading,
            precision,
            hdop,
            pdop,
            event_id,
            mn_name,
            text,
            mn_roaming,
            mn_code,
            mn_csq,
            mn_type,
            flags,
            entries,
            names,
        } = self;
        tracker.clear();
        message_time.clear();
        server_time.clear();
        gps_fix_type.clear();
        lat.clear();
        lng.clear();
        speed.clear();
        alt.clear();
        satellites.clear();
        heading.clear();
        precision.clear();
        hdop.clear();
        pdop.clear();
        event_id.clear();
        mn_name.clear();
        text.clear();
        mn_roaming.clear();
        mn_code.clear();
        mn_csq.clear();
        mn_type.clear();
        flags.clear();
        entries.clear();
        names.clear();
    }

    /// Rows it holds room for without growing.
    pub fn capacity(&self) -> usize {
        self.tracker.capacity()
    }

    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.tracker.reserve(rows);
        self.message_time.reserve(rows);
        self.server_time.reserve(rows);
        self.gps_fix_type.reserve(rows);
        self.lat.reserve(rows);
        self.lng.reserve(rows);
        self.speed.reserve(rows);
        self.alt.reserve(rows);
        self.satellites.reserve(rows);
        self.heading.reserve(rows);
        self.precision.reserve(rows);
        self.hdop.reserve(rows);
        self.pdop.reserve(rows);
        self.event_id.reserve(rows);
        self.mn_name.reserve(rows);
        self.mn_roaming.reserve(rows);
        self.mn_code.reserve(rows);
        self.mn_csq.reserve(rows);
        self.mn_type.reserve(rows);
        self.flags.reserve(rows);
        self.entries.rows.reserve(rows);
    }

    /// The rows of `messages`, in order.
    pub fn from_messages<'m>(messages: impl IntoIterator<Item = &'m Message>) -> Self {
        let messages = messages.into_iter();
        let mut rows = Self::with_capacity(messages.size_hint().0);
        for m in messages {
            rows.push_message(m);
        }
        rows
    }

    /// Appends the row of `m`.
    pub(crate) fn push_message(&mut self, m: &Message) {
        self.push(
            m.tracker_id.0,
            &Scalars::of(m),
            InnerLists {
                discrete_inputs: &m.discrete_inputs,
                discrete_outputs: &m.discrete_outputs,
                inputs: &m.inputs,
                states: &m.states,
            },
        );
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }

    /// Appends a row.
    pub(crate) fn push(&mut self, tracker: i64, s: &Scalars<'_>, inner: InnerLists<'_>) {
        self.tracker.push(tracker);
        self.message_time.push(s.message_time_ms);
        self.server_time.push(s.server_time_ms);
        self.gps_fix_type.push(s.gps_fix_type);
        self.lat.push(s.lat);
        self.lng.push(s.lng);
        self.speed.push(s.speed);
        self.alt.push(s.alt);
        self.satellites.push(s.satellites);
        self.heading.push(s.heading);
        self.precision.push(s.precision);
        self.hdop.push(s.hdop);
        self.pdop.push(s.pdop);
        self.event_id.push(s.event_id);
        self.mn_name
            .push(s.mn_name.map(|name| push_text(&mut self.text, name)));
        self.mn_roaming.push(s.mn_roaming);
        self.mn_code.push(s.mn_code);
        self.mn_csq.push(s.mn_csq);
        self.mn_type.push(s.mn_type);
        self.flags.push(s.flags);
        // The row before's entries: a row usually names the same columns in
        // the same places (a body's devices are mostly of one type), and
        // comparing a name with the one there costs less than a look-up.
        let previous = self.entries.last();
        let (block, start) = self.entries.room(
            inner.discrete_inputs.len()
                + inner.discrete_outputs.len()
                + inner.inputs.len()
                + inner.states.len(),
        );
        let mut slot = 0;
        for (kind, list) in [
            (InnerKind::DiscreteInputs, inner.discrete_inputs),
            (InnerKind::DiscreteOutputs, inner.discrete_outputs),
        ] {
            for &(number, value) in list {
                let id = self.id_at(
                    previous,
                    slot,
                    |n| n.kind == kind && n.number == number,
                    |names| names.discrete(kind, number),
                );
                self.entries.push(block, (id, InnerValue::Discrete(value)));
                slot += 1;
            }
        }
        let named =
            inner
                .inputs
                .iter()
                .map(|(name, value)| (InnerKind::Inputs, name, InnerValue::Number(*value)))
                .chain(inner.states.iter().map(|(name, value)| {
                    (InnerKind::States, name, InnerValue::State(value.clone()))
                }));
        for (kind, name, value) in named {
            let id = self.id_at(
                previous,
                slot,
                |n| n.kind == kind && n.name == *name,
                |names| names.named(kind, name),
            );
            self.entries.push(block, (id, value));
            slot += 1;
        }
        self.entries.end_row(block, start);
    }

    /// The id of the column `matches` picks: the one of entry `slot` of
    /// the row before (`previous`) if it has one there and it matches,
    /// else the one `find` looks up.
    fn id_at(
        &mut self,
        previous: Option<Span>,
        slot: usize,
        matches: impl Fn(&InnerName) -> bool,
        find: impl FnOnce(&mut Names) -> u32,
    ) -> u32 {
        if let Some(&(id, _)) = previous.and_then(|span| self.entries.of_span(span).get(slot))
            && matches(self.names.get(id))
        {
            return id;
        }
        find(&mut self.names)
    }

    /// Sets the tracker of row `row`.
    pub fn set_tracker(&mut self, row: usize, tracker: TrackerId) {
        self.tracker[row] = tracker.0;
    }

    /// Keeps the rows at `kept` (ascending), in order.
    pub fn retain(&mut self, kept: &[usize]) {
        if kept.len() == self.len() {
            return;
        }
        fn pick<T: Clone>(column: &mut Vec<T>, kept: &[usize]) {
            *column = kept.iter().map(|&row| column[row].clone()).collect();
        }
        pick(&mut self.tracker, kept);
        pick(&mut self.message_time, kept);
        pick(&mut self.server_time, kept);
        pick(&mut self.gps_fix_type, kept);
        pick(&mut self.lat, kept);
        pick(&mut self.lng, kept);
        pick(&mut self.speed, kept);
        pick(&mut self.alt, kept);
        pick(&mut self.satellites, kept);
        pick(&mut self.heading, kept);
        pick(&mut self.precision, kept);
        pick(&mut self.hdop, kept);
        pick(&mut self.pdop, kept);
        pick(&mut self.event_id, kept);
        let mut text = String::new();
        self.mn_name = kept
            .iter()
            .map(|&row| self.mn_name_of(row).map(|name| push_text(&mut text, name)))
            .collect();
        self.text = text;
        pick(&mut self.mn_roaming, kept);
        pick(&mut self.mn_code, kept);
        pick(&mut self.mn_csq, kept);
        pick(&mut self.mn_type, kept);
        pick(&mut self.flags, kept);
        let mut entries = Entries::with_capacity(kept.len());
        entries.spare = std::mem::take(&mut self.entries.spare);
        for &row in kept {
            entries.push_row(self.entries_of(row));
        }
        self.entries = entries;
        // Names no kept row uses stay: they only cost a look-up entry.
    }

    /// How many inner entries all rows hold.
    pub(crate) fn entry_count(&self) -> usize {
        self.entries.count
    }

    /// The `mn_name` of row `row`.
    pub(crate) fn mn_name_of(&self, row: usize) -> Option<&str> {
        let (start, end) = self.mn_name[row]?;
        self.text.get(start as usize..end as usize)
    }

    /// The inner entries of row `row`, in a message's order.
    pub(crate) fn entries_of(&self, row: usize) -> &[(u32, InnerValue)] {
        self.entries.of_span(self.entries.rows[row])
    }

    /// The day partition, time and tracker of row `row`, as rows are sorted.
    pub(crate) fn order_key(&self, row: usize) -> (i64, i64, i64) {
        let time = self.message_time[row];
        (day_of(time), self.tracker[row], time)
    }

    /// Row `row` as a [`Message`].
    #[cfg(test)]
    pub(crate) fn message(&self, row: usize) -> Message {
        let mut m = Message {
            tracker_id: TrackerId(self.tracker[row]),
            message_time_ms: self.message_time[row],
            server_time_ms: self.server_time[row],
            gps_fix_type: self.gps_fix_type[row],
            lat: self.lat[row],
            lng: self.lng[row],
            speed: self.speed[row],
            alt: self.alt[row],
            satellites: self.satellites[row],
            heading: self.heading[row],
            precision: self.precision[row],
            hdop: self.hdop[row],
            pdop: self.pdop[row],
            event_id: self.event_id[row],
            mn_name: self.mn_name_of(row).map(str::to_owned),
            mn_roaming: self.mn_roaming[row],
            mn_code: self.mn_code[row],
            mn_csq: self.mn_csq[row],
            mn_type: self.mn_type[row],
            flags: self.flags[row],
            ..Message::default()
        };
        for (id, value) in self.entries_of(row) {
            let name = self.names.get(*id);
            match (name.kind, value) {
                (InnerKind::DiscreteInputs, InnerValue::Discrete(v)) => {
                    m.discrete_inputs.push((name.number, *v));
                }
                (InnerKind::DiscreteOutputs, InnerValue::Discrete(v)) => {
                    m.discrete_outputs.push((name.number, *v));
                }
                (InnerKind::Inputs, InnerValue::Number(v)) => {
                    m.inputs.push((name.name.clone(), *v));
                }
                (InnerKind::States, InnerValue::State(v)) => {
                    m.states.push((name.name.clone(), v.clone()));
                }
                // `push` pairs each kind with its value.
                _ => {}
            }
        }
        m
    }

    /// Appends row `row`'s WAL encoding to `out`: the postcard of its
    /// [`crate::batch::Entry`] (the message, then `content_hash`), and
    /// returns the content hash: the xxh3 of the message's postcard with
    /// its server time as 0, so a retransmission hashes the same whenever
    /// it arrives. `scratch` is reused between calls.
    pub(crate) fn encode(&self, row: usize, out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> u64 {
        let start = out.len();
        zigzag(out, self.tracker[row]);
        zigzag(out, self.message_time[row]);
        let server_at = out.len();
        zigzag(out, self.server_time[row]);
        let rest_at = out.len();
        option(out, self.gps_fix_type[row], |out, t| varint(out, t as u64));
        option(out, self.lat[row], float);
        option(out, self.lng[row], float);
        option(out, self.speed[row], float);
        option(out, self.alt[row], int32);
        option(out, self.satellites[row], int32);
        option(out, self.heading[row], int32);
        option(out, self.precision[row], int32);
        option(out, self.hdop[row], float);
        option(out, self.pdop[row], float);
        option(out, self.event_id[row], zigzag);
        option(out, self.mn_name_of(row), text);
        option(out, self.mn_roaming[row], int32);
        option(out, self.mn_code[row], zigzag);
        option(out, self.mn_csq[row], int32);
        option(out, self.mn_type[row], |out, t| varint(out, t as u64));
        option(out, self.flags[row], zigzag);
        // Each kind's entries, counted, then written, in `InnerKind::ALL`'s
        // order: a row's entries are in that order already (`push` writes
        // them kind by kind, `retain` copies rows as they are), so one
        // pass counts them and they are written as they lie.
        let entries = self.entries_of(row);
        let mut counts = [0usize; InnerKind::ALL.len()];
        for (id, _) in entries {
            let kind = self.names.get(*id).kind.index();
            debug_assert!(
                counts[kind + 1..].iter().all(|&c| c == 0),
                "entries out of kind order"
            );
            counts[kind] += 1;
        }
        let mut at = 0;
        for count in counts {
            varint(out, count as u64);
            for (id, value) in &entries[at..at + count] {
                self.encode_entry(out, *id, value);
            }
            at += count;
        }
        scratch.clear();
        scratch.extend_from_slice(&out[start..server_at]);
        scratch.push(0);
        scratch.extend_from_slice(&out[rest_at..]);
        let hash = xxhash_rust::xxh3::xxh3_64(scratch);
        varint(out, hash);
        hash
    }
}

impl Rows {
    /// One inner entry of a row's WAL encoding: its number or name, and its value.
    fn encode_entry(&self, out: &mut Vec<u8>, id: u32, value: &InnerValue) {
        let name = self.names.get(id);
        match value {
            InnerValue::Discrete(v) => {
                varint(out, u64::from(name.number));
                out.push(*v);
            }
            InnerValue::Number(v) => {
                text(out, &name.name);
                float(out, *v);
            }
            InnerValue::State(v) => {
                text(out, &name.name);
                state(out, v);
            }
        }
    }
}

/// Inner entries a block holds (64 KiB of them), unless a row has more.
const ENTRY_BLOCK: usize = 2_048;

/// Where a row's inner entries lie: their block, and their range in it.
#[derive(Debug, Clone, Copy)]
struct Span {
    block: u32,
    start: u32,
    end: u32,
}

/// Every row's inner entries, in blocks of [`ENTRY_BLOCK`] entries that
/// are filled and never moved; a row's entries lie in one block. One
/// vector of them all, grown by doubling, copied the entries so far at
/// each step and faulted in fresh pages for them (a tenth of the request
/// threads' parse): a block of this size is reused from the allocator's
/// free pages.
#[derive(Debug, Clone, Default)]
struct Entries {
    blocks: Vec<Vec<(u32, InnerValue)>>,
    /// Each row's entries.
    rows: Vec<Span>,
    /// Entries in all.
    count: usize,
    /// Empty blocks of [`ENTRY_BLOCK`] entries, from before a [`clear`](Self::clear).
    spare: Vec<Vec<(u32, InnerValue)>>,
}

/// Empty blocks an [`Entries`] keeps for its next rows: what a 1 MiB chunk
/// of the benchmark's lines fills (about 25,000 entries), with room to spare.
const SPARE_ENTRY_BLOCKS: usize = 24;

impl Entries {
    fn with_capacity(rows: usize) -> Self {
        Self {
            blocks: Vec::new(),
            rows: Vec::with_capacity(rows),
            count: 0,
            spare: Vec::new(),
        }
    }

    /// Empties it, keeping up to [`SPARE_ENTRY_BLOCKS`] blocks' room.
    fn clear(&mut self) {
        for mut block in self.blocks.drain(..) {
            if block.capacity() == ENTRY_BLOCK && self.spare.len() < SPARE_ENTRY_BLOCKS {
                block.clear();
                self.spare.push(block);
            }
        }
        self.rows.clear();
        self.count = 0;
    }

    /// The last row's entries.
    fn last(&self) -> Option<Span> {
        self.rows.last().copied()
    }

    /// The entries of `span`.
    fn of_span(&self, span: Span) -> &[(u32, InnerValue)] {
        &self.blocks[span.block as usize][span.start as usize..span.end as usize]
    }

    /// The block with room for the next row's `count` entries (the last
    /// one, or a new one), and where the row starts in it.
    fn room(&mut self, count: usize) -> (usize, usize) {
        if self
            .blocks
            .last()
            .is_none_or(|last| last.capacity() - last.len() < count)
        {
            // Rows without entries take no block's room.
            let block = match count {
                0 => Vec::new(),
                1..=ENTRY_BLOCK => self
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(ENTRY_BLOCK)),
                _ => Vec::with_capacity(count),
            };
            self.blocks.push(block);
        }
        let block = self.blocks.len() - 1;
        (block, self.blocks[block].len())
    }

    /// Adds an entry of the row begun in `block` (within the room asked for).
    fn push(&mut self, block: usize, entry: (u32, InnerValue)) {
        self.blocks[block].push(entry);
    }

    /// Ends the row whose entries went to `block` from `start` on.
    fn end_row(&mut self, block: usize, start: usize) {
        let end = self.blocks[block].len();
        self.count += end - start;
        // A write holds far fewer than 2^32 entries (bodies are capped).
        self.rows.push(Span {
            block: block as u32,
            start: start as u32,
            end: end as u32,
        });
    }

    /// Adds a row of `entries`.
    fn push_row(&mut self, entries: &[(u32, InnerValue)]) {
        let (block, start) = self.room(entries.len());
        self.blocks[block].extend_from_slice(entries);
        self.end_row(block, start);
    }
}

/// Appends `name` to `text`; answers where it lies.
fn push_text(text: &mut String, name: &str) -> (u32, u32) {
    let start = text.len();
    text.push_str(name);
    // A write's text is far below 4 GiB (bodies are capped).
    (start as u32, text.len() as u32)
}

// postcard's encodings (its wire format, version 1): unsigned integers
// as LEB128 varints (but `u8` as its byte), signed ones zigzagged first,
// floats as little-endian bytes, `Option` as a 0 or 1 byte then the
// value, enum variants by index as varints, strings as their length then
// their bytes, sequences likewise.

pub(crate) fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(out: &mut Vec<u8>, value: i64) {
    varint(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn int32(out: &mut Vec<u8>, value: i32) {
    zigzag(out, i64::from(value));
}

fn float(out: &mut Vec<u8>, value: f64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn text(out: &mut Vec<u8>, value: &str) {
    varint(out, value.len() as u64);
    out.extend_from_slice(value.as_bytes());
}

fn option<T>(out: &mut Vec<u8>, value: Option<T>, write: impl FnOnce(&mut Vec<u8>, T)) {
    match value {
        None => out.push(0),
        Some(value) => {
            out.push(1);
            write(out, value);
        }
    }
}

fn state(out: &mut Vec<u8>, value: &StateValue) {
    match value {
        StateValue::Text(t) => {
            varint(out, 0);
            text(out, t);
        }
        StateValue::Number(n) => {
            varint(out, 1);
            float(out, *n);
        }
        StateValue::Flag(flag) => {
            varint(out, 2);
            out.push(u8::from(*flag));
        }
    }
}

#[cfg(test)]
mod tests;
