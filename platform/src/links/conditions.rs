//! The search conditions of `link/list` (clarification 43), checked and
//! turned into one SQL condition over `geo_links l` whose values are bound,
//! never spliced.

use std::borrow::Cow;

use serde::Deserialize;

use super::{Bind, CREATOR_NAME, instant_ms};
use crate::listing::like_pattern;
use crate::{Error, Result, UserAuth};

/// Conditions a list takes at most, nested ones included.
pub const MAX_CONDITIONS: usize = 72;
/// Items of an `and` or `or`: at least.
const MIN_GROUP: usize = 2;
/// Items of an `and` or `or`: at most.
const MAX_GROUP: usize = 60;
/// Characters of a `contains` value: at most.
const MAX_CONTAINS_CHARS: usize = 760;
/// Values of an `in`: at most.
const MAX_IN_VALUES: usize = 1_000;

/// A search condition: a group, a negation, or a test of one field.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Condition {
    /// Every one of 2 to 60 conditions.
    And {
        /// The conditions.
        #[schema(no_recursion, min_items = 2, max_items = 60)]
        conditions: Vec<Condition>,
    },
    /// Any of 2 to 60 conditions.
    Or {
        /// The conditions.
        #[schema(no_recursion, min_items = 2, max_items = 60)]
        conditions: Vec<Condition>,
    },
    /// Not the condition.
    Not {
        /// The condition.
        #[schema(no_recursion)]
        condition: Box<Condition>,
    },
    /// `trackers` holds the tracker with this id; `creator` is the user with this id.
    Eq {
        /// `trackers` or `creator`.
        field: String,
        /// An id.
        #[schema(value_type = i64)]
        value: serde_json::Number,
    },
    /// The field holds this text, case-insensitively (1 to 760 characters).
    Contains {
        /// `trackers` (labels), `aliases`, `creator` (full name), `description`.
        field: String,
        /// The text.
        #[schema(min_length = 1, max_length = 760)]
        value: String,
    },
    /// The field is one of these: ids for `trackers` and `creator`, texts
    /// (whole, case-insensitively) for `aliases` and `description`.
    In {
        /// `trackers`, `aliases`, `creator`, `description`.
        field: String,
        /// 1 to 1,000 values.
        #[schema(min_items = 1, max_items = 1000)]
        value: Vec<serde_json::Value>,
    },
    /// The date is within `from`..`to` (inclusive, main interface date/times).
    Period {
        /// `create_date` or `expire_date`.
        field: String,
        /// The period.
        value: Period,
    },
}

/// An inclusive period of main interface date/times in the account's zone.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub struct Period {
    /// The first instant (`YYYY-MM-DD HH:MM:SS`).
    #[schema(example = "2026-11-01 00:00:00")]
    pub from: String,
    /// The last instant.
    #[schema(example = "2026-11-30 23:59:59")]
    pub to: String,
}

/// What a field is tested as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Trackers,
    Aliases,
    Creator,
    Description,
    CreateDate,
    ExpireDate,
}

/// The whole condition of `conditions` joined by AND, or `None` for none;
/// 7 naming the first that is malformed. `first_bind` is the number of
/// `$n` placeholders taken before these.
pub(crate) fn to_sql(
    conditions: &[Condition],
    caller: &UserAuth,
    binds: &mut Vec<Bind>,
    first_bind: usize,
) -> Result<Option<String>> {
    if conditions.is_empty() {
        return Ok(None);
    }
    let total: usize = conditions.iter().map(count).sum();
    if total > MAX_CONDITIONS {
        return Err(Error::invalid(
            "conditions",
            format!(
                "at most {MAX_CONDITIONS} conditions in all, nested ones included; got {total}"
            ),
        ));
    }
    let mut sql = SqlWriter {
        caller,
        binds,
        first_bind,
    };
    let parts = conditions
        .iter()
        .enumerate()
        .map(|(i, c)| sql.condition(c, &format!("conditions[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(format!("({})", parts.join(" AND "))))
}

/// Conditions in `condition`, itself included.
fn count(condition: &Condition) -> usize {
    1 + match condition {
        Condition::And { conditions } | Condition::Or { conditions } => {
            conditions.iter().map(count).sum()
        }
        Condition::Not { condition } => count(condition),
        _ => 0,
    }
}

struct SqlWriter<'a> {
    caller: &'a UserAuth,
    binds: &'a mut Vec<Bind>,
    first_bind: usize,
}

impl SqlWriter<'_> {
    /// Binds a value; its placeholder.
    fn bind(&mut self, value: Bind) -> String {
        self.binds.push(value);
        format!("${}", self.first_bind + self.binds.len())
    }

    fn field(&self, name: &str, path: &str) -> Result<Field> {
        let field = match name {
            "trackers" => Field::Trackers,
            "aliases" => Field::Aliases,
            "creator" if !self.caller.is_subuser() => Field::Creator,
            "creator" => {
                return Err(Error::invalid(
                    format!("{path}.field"),
                    "`creator` is for master users only",
                ));
            }
            "description" => Field::Description,
            "create_date" => Field::CreateDate,
            "expire_date" => Field::ExpireDate,
            other => {
                return Err(Error::invalid(
                    format!("{path}.field"),
                    format!(
                        "{other:?} is not one of trackers, aliases, creator, description, \
                         create_date, expire_date"
                    ),
                ));
            }
        };
        Ok(field)
    }

    fn condition(&mut self, condition: &Condition, path: &str) -> Result<String> {
        let not_for = |kind: &str, field: &str| {
            Error::invalid(
                Cow::Owned(format!("{path}.type")),
                format!("`{kind}` does not apply to the field `{field}`"),
            )
        };
        match condition {
            Condition::And { conditions } | Condition::Or { conditions } => {
                if !(MIN_GROUP..=MAX_GROUP).contains(&conditions.len()) {
                    return Err(Error::invalid(
                        format!("{path}.conditions"),
                        format!(
                            "must hold {MIN_GROUP} to {MAX_GROUP} conditions, got {}",
                            conditions.len()
                        ),
                    ));
                }
                let joiner = if matches!(condition, Condition::And { .. }) {
                    " AND "
                } else {
                    " OR "
                };
                let parts = conditions
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.condition(c, &format!("{path}.conditions[{i}]")))
                    .collect::<Result<Vec<_>>>()?;
                Ok(format!("({})", parts.join(joiner)))
            }
            Condition::Not { condition } => Ok(format!(
                "NOT {}",
                self.condition(condition, &format!("{path}.condition"))?
            )),
            Condition::Eq { field, value } => {
                let id = value.as_i64().ok_or_else(|| {
                    Error::invalid(format!("{path}.value"), "must be a whole number (an id)")
                })?;
                match self.field(field, path)? {
                    Field::Trackers => {
                        let p = self.bind(Bind::Int(id));
                        Ok(format!(
                            "EXISTS (SELECT 1 FROM geo_link_trackers lt WHERE lt.link_id = l.id AND lt.tracker_id = {p})"
                        ))
                    }
                    Field::Creator => Ok(format!("l.creator_id = {}", self.bind(Bind::Int(id)))),
                    _ => Err(not_for("eq", field)),
                }
            }
            Condition::Contains { field, value } => {
                let chars = value.chars().count();
                if value.trim().is_empty() || chars > MAX_CONTAINS_CHARS {
                    return Err(Error::invalid(
                        format!("{path}.value"),
                        format!("must be 1 to {MAX_CONTAINS_CHARS} characters, not blank"),
                    ));
                }
                let f = self.field(field, path)?;
                let p = self.bind(Bind::Text(like_pattern(value)));
                match f {
                    Field::Trackers => Ok(format!(
                        "EXISTS (SELECT 1 FROM geo_link_trackers lt JOIN trackers t ON t.id = lt.tracker_id \
                         WHERE lt.link_id = l.id AND lower(t.label) LIKE {p} ESCAPE '\\')"
                    )),
                    Field::Aliases => Ok(format!(
                        "EXISTS (SELECT 1 FROM geo_link_trackers lt WHERE lt.link_id = l.id \
                         AND lt.alias_search LIKE {p} ESCAPE '\\')"
                    )),
                    Field::Creator => Ok(format!("{CREATOR_NAME} LIKE {p} ESCAPE '\\'")),
                    Field::Description => Ok(format!("l.description_search LIKE {p} ESCAPE '\\'")),
                    Field::CreateDate | Field::ExpireDate => Err(not_for("contains", field)),
                }
            }
            Condition::In { field, value } => {
                if value.is_empty() || value.len() > MAX_IN_VALUES {
                    return Err(Error::invalid(
                        format!("{path}.value"),
                        format!("must hold 1 to {MAX_IN_VALUES} values"),
                    ));
                }
                let f = self.field(field, path)?;
                let ids = || {
                    value
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            v.as_i64().ok_or_else(|| {
                                Error::invalid(
                                    format!("{path}.value[{i}]"),
                                    "must be a whole number (an id)",
                                )
                            })
                        })
                        .collect::<Result<Vec<i64>>>()
                };
                let texts = || {
                    value
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            v.as_str().map(|s| s.trim().to_lowercase()).ok_or_else(|| {
                                Error::invalid(format!("{path}.value[{i}]"), "must be a text")
                            })
                        })
                        .collect::<Result<Vec<String>>>()
                };
                // `$values` is the values' JSON array, bound.
                let (values, test) = match f {
                    Field::Trackers => (
                        json_array(&ids()?)?,
                        "EXISTS (SELECT 1 FROM geo_link_trackers lt WHERE lt.link_id = l.id \
                         AND lt.tracker_id IN (SELECT value FROM json_each($values)))",
                    ),
                    Field::Creator => (
                        json_array(&ids()?)?,
                        "l.creator_id IN (SELECT value FROM json_each($values))",
                    ),
                    Field::Aliases => (
                        json_array(&texts()?)?,
                        "EXISTS (SELECT 1 FROM geo_link_trackers lt WHERE lt.link_id = l.id \
                         AND lt.alias_search IN (SELECT value FROM json_each($values)))",
                    ),
                    Field::Description => (
                        json_array(&texts()?)?,
                        "l.description_search IN (SELECT value FROM json_each($values))",
                    ),
                    Field::CreateDate | Field::ExpireDate => return Err(not_for("in", field)),
                };
                let p = self.bind(Bind::Text(values));
                Ok(test.replace("$values", &p))
            }
            Condition::Period { field, value } => {
                let column = match self.field(field, path)? {
                    Field::CreateDate => "l.created_ms",
                    Field::ExpireDate => "l.to_ms",
                    _ => return Err(not_for("period", field)),
                };
                let zone = &self.caller.time_zone;
                let from = instant_ms(format!("{path}.value.from"), &value.from, zone)?;
                let to = instant_ms(format!("{path}.value.to"), &value.to, zone)?;
                if to < from {
                    return Err(Error::invalid(
                        format!("{path}.value.to"),
                        "must not be before from",
                    ));
                }
                let (from, to) = (self.bind(Bind::Int(from)), self.bind(Bind::Int(to)));
                Ok(format!("{column} BETWEEN {from} AND {to}"))
            }
        }
    }
}

/// Values bound as one JSON array (read back with `json_each`).
fn json_array<T: serde::Serialize>(values: &[T]) -> Result<String> {
    serde_json::to_string(values).map_err(|e| Error::corrupt("condition values", e))
}
