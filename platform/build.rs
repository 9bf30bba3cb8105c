//! `sqlx::migrate!` embeds `migrations/sqlite` when `platform` compiles;
//! without this, a new migration file alone would not make it compile
//! again (sqlx's advice for stable Rust).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
