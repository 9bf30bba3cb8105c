//! Issue 16's geocoder figures, in process on one core: nearest-place
//! lookups (target: 1,000,000 a second or more) and name searches (the
//! in-process part of `search_address`, whose target is p99 under 5 ms over
//! HTTP). `cargo bench -p geocoder`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Uniform numbers in [0, 1) (SplitMix64, fixed seed).
fn uniform() -> impl FnMut() -> f64 {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Where trackers are: within about 30 km of a place of the set (a place
/// drawn at random, then up to 0.3 degrees off in each direction).
fn near_places(n: usize) -> Vec<(f64, f64)> {
    let places = geocoder::bundled();
    let mut next = uniform();
    (0..n)
        .map(|_| {
            let p = places.place((next() * places.len() as f64) as usize);
            let lat = (p.lat + next() * 0.6 - 0.3).clamp(-90.0, 90.0);
            let lng = (p.lng + next() * 0.6 - 0.3).clamp(-180.0, 180.0);
            (lat, lng)
        })
        .collect()
}

/// Anywhere between 60 south and 90 north, oceans included: the nearest
/// place may be a thousand kilometres away, and the tree looks further.
fn anywhere(n: usize) -> Vec<(f64, f64)> {
    let mut next = uniform();
    (0..n)
        .map(|_| (next() * 150.0 - 60.0, next() * 360.0 - 180.0))
        .collect()
}

fn nearest(c: &mut Criterion) {
    let places = geocoder::bundled();
    // The peer: the `reverse_geocoder` crate over the same places (its own
    // copy), `f64` points in a k-d tree filled in the file's order.
    let peer = reverse_geocoder::ReverseGeocoder::new();
    let mut group = c.benchmark_group("geocoder nearest");
    for (name, points) in [
        ("10,000 points near places", near_places(10_000)),
        ("10,000 points anywhere", anywhere(10_000)),
    ] {
        group.throughput(Throughput::Elements(points.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                for &(lat, lng) in &points {
                    black_box(places.nearest(black_box(lat), black_box(lng)));
                }
            })
        });
        group.bench_function(format!("{name}, reverse_geocoder crate"), |b| {
            b.iter(|| {
                for &(lat, lng) in &points {
                    black_box(peer.search(black_box((lat, lng))));
                }
            })
        });
        // Both find the same place (or one as near: ties between places).
        for &(lat, lng) in points.iter().take(1000) {
            let ours = places.nearest(lat, lng);
            let theirs = peer.search((lat, lng)).record;
            assert!(
                ours.name == theirs.name
                    || (ours.lat - theirs.lat).abs() + (ours.lng - theirs.lon).abs() < 1.0,
                "({lat}, {lng}): {} against {}",
                ours.name,
                theirs.name
            );
        }
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("geocoder load");
    group.sample_size(10);
    let csv = {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&include_bytes!("../data/places.csv.gz")[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    group.bench_function("parse and index 144,563 places", |b| {
        b.iter(|| black_box(geocoder::Gazetteer::from_csv(&csv).unwrap().len()))
    });
    group.finish();
}

fn search(c: &mut Criterion) {
    let places = geocoder::bundled();
    let mut group = c.benchmark_group("geocoder search");
    for text in [
        "London",
        "san",
        "Almati",
        "Saint-Étienne, France",
        "Qwertzuiop",
    ] {
        group.bench_function(text, |b| {
            b.iter(|| black_box(places.search(black_box(text), None, 10)))
        });
    }
    group.finish();
}

criterion_group!(benches, nearest, search, load);
criterion_main!(benches);
