//! Progress on stderr: a bar on a terminal, a line every few seconds otherwise.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

/// How often a progress line is printed when stderr is not a terminal.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// Progress of acknowledged input, shared by the tasks that send it.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mode: Mode,
    bar: ProgressBar,
    /// Bytes of the sources acknowledged (or given up on).
    bytes: AtomicU64,
    /// Messages acknowledged.
    messages: AtomicU64,
    total_bytes: Option<u64>,
    started: Instant,
    /// Stops the line printer.
    done: CancellationToken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An indicatif bar on a terminal.
    Bar,
    /// A plain line every [`LINE_INTERVAL`].
    Lines,
    /// Nothing at all, notes included.
    Off,
}

impl Progress {
    /// A bar when stderr is a terminal, else periodic lines; `total_bytes` (if
    /// known) gives the percentage and the ETA. Must be called within the runtime.
    pub(crate) fn on_stderr(total_bytes: Option<u64>) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(total_bytes, ProgressDrawTarget::stderr());
            let template = match total_bytes {
                Some(_) => {
                    "{spinner} {elapsed_precise} [{wide_bar}] {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} ETA {eta} {msg}"
                }
                None => "{spinner} {elapsed_precise} {decimal_bytes} {decimal_bytes_per_sec} {msg}",
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message("0 messages sent");
            bar.enable_steady_tick(Duration::from_millis(200));
            Self::new(Mode::Bar, bar, total_bytes)
        } else {
            let progress = Self::new(Mode::Lines, ProgressBar::hidden(), total_bytes);
            tokio::spawn(progress.clone().print_lines());
            progress
        }
    }

    /// No output at all.
    pub(crate) fn off() -> Self {
        Self::new(Mode::Off, ProgressBar::hidden(), None)
    }

    fn new(mode: Mode, bar: ProgressBar, total_bytes: Option<u64>) -> Self {
        Self {
            inner: Arc::new(Inner {
                mode,
                bar,
                bytes: AtomicU64::new(0),
                messages: AtomicU64::new(0),
                total_bytes,
                started: Instant::now(),
                done: CancellationToken::new(),
            }),
        }
    }

    /// Counts a batch as done: `bytes` of the sources, `messages` sent.
    pub(crate) fn advance(&self, bytes: u64, messages: u64) {
        let inner = &self.inner;
        inner.bytes.fetch_add(bytes, Ordering::Relaxed);
        let sent = inner.messages.fetch_add(messages, Ordering::Relaxed) + messages;
        if inner.mode == Mode::Bar {
            inner.bar.inc(bytes);
            inner
                .bar
                .set_message(format!("{} messages sent", grouped(sent)));
        }
    }

    /// Prints a line on stderr, above the bar if there is one.
    pub(crate) fn note(&self, text: &str) {
        match self.inner.mode {
            Mode::Bar => self.inner.bar.println(text),
            Mode::Lines => eprintln!("{text}"),
            Mode::Off => {}
        }
    }

    /// Removes the bar and stops the periodic lines.
    pub(crate) fn finish(&self) {
        self.inner.done.cancel();
        if self.inner.mode == Mode::Bar {
            self.inner.bar.finish_and_clear();
        }
    }

    async fn print_lines(self) {
        let mut ticks = tokio::time::interval(LINE_INTERVAL);
        ticks.tick().await;
        loop {
            tokio::select! {
                () = self.inner.done.cancelled() => return,
                _ = ticks.tick() => eprintln!("{}", self.line()),
            }
        }
    }

    /// `import: 12.3 MB of 45.6 MB (27%), 123,456 messages sent, 4.1 MB/s, ETA 8 s`.
    fn line(&self) -> String {
        let inner = &self.inner;
        let bytes = inner.bytes.load(Ordering::Relaxed);
        let messages = inner.messages.load(Ordering::Relaxed);
        let seconds = inner.started.elapsed().as_secs_f64().max(0.001);
        let rate = bytes as f64 / seconds;
        let mut line = format!("import: {}", megabytes(bytes));
        if let Some(total) = inner.total_bytes.filter(|total| *total > 0) {
            let percent = (bytes as f64 / total as f64 * 100.0).min(100.0);
            line.push_str(&format!(" of {} ({percent:.0}%)", megabytes(total)));
        }
        line.push_str(&format!(
            ", {} messages sent, {}/s",
            grouped(messages),
            megabytes(rate as u64)
        ));
        if let Some(total) = inner.total_bytes.filter(|_| rate > 0.0) {
            let eta = total.saturating_sub(bytes) as f64 / rate;
            line.push_str(&format!(", ETA {eta:.0} s"));
        }
        line
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// `1234567` as `1,234,567`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn a_progress_line_names_amounts_and_eta() {
        let progress = Progress::new(Mode::Lines, ProgressBar::hidden(), Some(4_000_000));
        progress.advance(1_000_000, 1234);
        let line = progress.line();
        assert!(
            line.starts_with("import: 1.0 MB of 4.0 MB (25%), 1,234 messages sent, "),
            "{line}"
        );
        assert!(line.contains("ETA"), "{line}");
    }
}
