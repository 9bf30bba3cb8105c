//! ISO 8601 intervals: `<start>/<end>`, `<start>/<duration>`, `<duration>/<end>`.

use super::{Duration, Range, TimeContext, TimeError, duration, instant, quoted};

/// Parses one ISO 8601 interval: `<start>/<end>`, `<start>/<duration>` or `<duration>/<end>`.
///
/// Durations are applied as the module docs describe (calendar units in
/// `ctx.zone`). The end must be after the start. Leading and trailing
/// whitespace, also around the `/`, is ignored. Errors are code 7 naming
/// `field`; the span limit is not checked here (see [`super::parse_selection`]).
pub fn parse_interval(
    text: &str,
    field: &'static str,
    ctx: &TimeContext,
) -> Result<Range, TimeError> {
    let text = text.trim();
    let shape = || {
        TimeError::invalid(
            field,
            format!(
                "must be an ISO 8601 interval <start>/<end>, <start>/<duration> or \
                 <duration>/<end>, such as 2024-03-01T00:00:00Z/P1D, got {}",
                quoted(text)
            ),
        )
    };
    let (left, right) = text.split_once('/').ok_or_else(shape)?;
    if right.contains('/') {
        return Err(shape());
    }
    let (left, right) = (left.trim(), right.trim());
    let instant = |side: &str, which: &str| {
        instant::parse_ms(side, ctx).map_err(|err| {
            TimeError::invalid(field, format!("{which} {}", err.describe(side, ctx.iso)))
        })
    };
    let duration = |side: &str| {
        duration::parse(side)
            .map_err(|err| TimeError::invalid(field, format!("duration {}", err.describe(side))))
    };
    let out_of_range = || {
        TimeError::invalid(
            field,
            format!(
                "reaches beyond the supported range of dates, got {}",
                quoted(text)
            ),
        )
    };

    let range = match (left.starts_with('P'), right.starts_with('P')) {
        (true, true) => {
            return Err(TimeError::invalid(
                field,
                format!(
                    "must have a date and time on at least one side of the /, got {}",
                    quoted(text)
                ),
            ));
        }
        (false, false) => Range {
            from_ms: instant(left, "start")?,
            to_ms: instant(right, "end")?,
        },
        (false, true) => {
            let from_ms = instant(left, "start")?;
            let to_ms = duration(right)?
                .after(from_ms, ctx.zone)
                .ok_or_else(out_of_range)?;
            Range { from_ms, to_ms }
        }
        (true, false) => {
            let span = duration(left)?;
            let to_ms = instant(right, "end")?;
            let from_ms = span.before(to_ms, ctx.zone).ok_or_else(out_of_range)?;
            Range { from_ms, to_ms }
        }
    };
    if range.to_ms <= range.from_ms {
        return Err(TimeError::invalid(
            field,
            format!("must end after it starts, got {}", quoted(text)),
        ));
    }
    Ok(range)
}

/// The range `<duration>/<now>`: `duration` before [`TimeContext::now_ms`] up to now.
///
/// For defaults such as the resampling `interval` (`P7D/<now>`, clarification
/// 22). Errors are code 7 naming `field`, for an empty or unrepresentable range.
pub fn range_ending_now(
    duration: &Duration,
    field: &'static str,
    ctx: &TimeContext,
) -> Result<Range, TimeError> {
    let from_ms = duration.before(ctx.now_ms, ctx.zone);
    match from_ms {
        Some(from_ms) if from_ms < ctx.now_ms => Ok(Range {
            from_ms,
            to_ms: ctx.now_ms,
        }),
        _ => Err(TimeError::invalid(
            field,
            "must be a non-empty range ending now within the supported dates",
        )),
    }
}
