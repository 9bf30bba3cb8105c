//! What every list call shares (clarification 31): sort items
//! `"<property>=asc|desc"`, a case-insensitive substring filter, and
//! `limit`/`offset` paging, turned into SQL by one set of rules.

use std::borrow::Cow;

use crate::{Error, Result};

/// Rows a list answers at most, and when no `limit` is given.
pub const MAX_LIST_LIMIT: u32 = 10_000;

/// A list request: sort items, filter and page, as the caller sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// `"<property>=asc"` or `"<property>=desc"` items, most significant first.
    pub sort: Vec<String>,
    /// A case-insensitive substring; blank is none.
    pub filter: Option<String>,
    /// Rows to answer at most ([`MAX_LIST_LIMIT`] when absent).
    pub limit: Option<i64>,
    /// Rows to skip.
    pub offset: Option<i64>,
}

/// What one kind of list allows.
#[derive(Debug)]
pub(crate) struct ListRules {
    /// Sort items at most.
    pub(crate) max_sort_items: usize,
    /// Filter characters at most.
    pub(crate) max_filter_chars: usize,
    /// Each sortable property and the SQL expression it sorts by.
    pub(crate) properties: &'static [(&'static str, &'static str)],
    /// The SQL expression that breaks ties (the record's id).
    pub(crate) tie_breaker: &'static str,
    /// The smallest `limit` taken (0 or 1).
    pub(crate) min_limit: i64,
}

/// One sort item of a checked list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortItem {
    /// The property, as the rules name it.
    pub(crate) property: &'static str,
    /// Whether it sorts descending.
    pub(crate) descending: bool,
}

/// A list request checked against its [`ListRules`]: SQL pieces to splice
/// (from the rules' constants only) and values to bind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedList {
    /// `ORDER BY` items, the tie breaker last.
    pub(crate) order_by: String,
    /// The sort items, most significant first (without the tie breaker).
    pub(crate) sort: Vec<SortItem>,
    /// The `LIKE` pattern of the filter (lower-cased, `\` escaping `%`, `_`
    /// and itself), to match against a lower-cased search column.
    pub(crate) pattern: Option<String>,
    /// The filter itself, trimmed and lower-cased (for a search index).
    pub(crate) needle: Option<String>,
    /// Rows to answer.
    pub(crate) limit: i64,
    /// Rows to skip.
    pub(crate) offset: i64,
}

impl CheckedList {
    /// The FTS5 query of a trigram index (`vehicle_search`,
    /// `panel_user_search`; migration 0019) finding the rows whose search
    /// text holds every trigram of the filter (the indexes keep no
    /// positions, so not as a phrase: a text holding them apart is found
    /// too). `None` without a filter or when the index cannot answer: fewer
    /// than 3 characters (no trigram), or control characters. A trigram
    /// index only narrows: the callers check every candidate against
    /// [`Self::pattern`].
    pub(crate) fn trigrams(&self) -> Option<String> {
        let needle: Vec<char> = self.needle.as_deref()?.chars().collect();
        if needle.len() < 3 || needle.iter().any(|c| c.is_control()) {
            return None;
        }
        let mut trigrams: Vec<String> = needle
            .windows(3)
            .map(|t| t.iter().collect::<String>().replace('"', "\"\""))
            .collect();
        trigrams.sort_unstable();
        trigrams.dedup();
        Some(
            trigrams
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(" AND "),
        )
    }
}

impl ListQuery {
    /// The request as SQL pieces, or 7 naming `sort`, `filter`, `offset`,
    /// or 212 for a `limit` above [`MAX_LIST_LIMIT`]. Ties break by the
    /// id ascending whatever the sort items' directions.
    pub(crate) fn checked(&self, rules: &ListRules) -> Result<CheckedList> {
        self.checked_with_ties(rules, false)
    }

    /// [`Self::checked`] with the ties broken by the id descending when
    /// `ties_descending`.
    fn checked_with_ties(&self, rules: &ListRules, ties_descending: bool) -> Result<CheckedList> {
        if self.sort.len() > rules.max_sort_items {
            return Err(Error::invalid(
                "sort",
                format!(
                    "at most {} items, got {}",
                    rules.max_sort_items,
                    self.sort.len()
                ),
            ));
        }
        let mut order_by = Vec::with_capacity(self.sort.len() + 1);
        let mut sort = Vec::with_capacity(self.sort.len());
        for (i, item) in self.sort.iter().enumerate() {
            let field = || Cow::Owned(format!("sort[{i}]"));
            let (property, direction) = item.trim().split_once('=').ok_or_else(|| {
                Error::invalid(field(), "must be `<property>=asc` or `<property>=desc`")
            })?;
            let descending = match direction.trim() {
                "asc" => false,
                "desc" => true,
                other => {
                    return Err(Error::invalid(
                        field(),
                        format!("direction {other:?} is not asc or desc"),
                    ));
                }
            };
            let &(name, expression) = rules
                .properties
                .iter()
                .find(|(name, _)| *name == property.trim())
                .ok_or_else(|| {
                    let names: Vec<&str> = rules.properties.iter().map(|(n, _)| *n).collect();
                    Error::invalid(
                        field(),
                        format!("{property:?} is not one of {}", names.join(", ")),
                    )
                })?;
            order_by.push(format!(
                "{expression} {}",
                if descending { "DESC" } else { "ASC" }
            ));
            sort.push(SortItem {
                property: name,
                descending,
            });
        }
        order_by.push(format!(
            "{} {}",
            rules.tie_breaker,
            if ties_descending { "DESC" } else { "ASC" }
        ));

        let filter = self.filter.as_deref().map(str::trim).unwrap_or_default();
        let chars = filter.chars().count();
        if chars > rules.max_filter_chars {
            return Err(Error::invalid(
                "filter",
                format!("at most {} characters, got {chars}", rules.max_filter_chars),
            ));
        }
        let needle = (!filter.is_empty()).then(|| filter.to_lowercase());
        let pattern = needle.as_deref().map(like_pattern);

        let limit = self.limit.unwrap_or(i64::from(MAX_LIST_LIMIT));
        if limit < rules.min_limit {
            return Err(Error::invalid(
                "limit",
                format!("must be {} or more", rules.min_limit),
            ));
        }
        if limit > i64::from(MAX_LIST_LIMIT) {
            return Err(Error::LimitTooBig {
                limit,
                max: i64::from(MAX_LIST_LIMIT),
            });
        }
        let offset = self.offset.unwrap_or(0);
        if offset < 0 {
            return Err(Error::invalid("offset", "must be 0 or more"));
        }
        Ok(CheckedList {
            order_by: order_by.join(", "),
            sort,
            pattern,
            needle,
            limit,
            offset,
        })
    }
}

/// A list request the panel's way (document 2): one `order_by` property,
/// `ascending` (default true), a filter and a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedQuery {
    /// The property to order by; by id when absent.
    pub order_by: Option<String>,
    /// Ascending unless false.
    pub ascending: bool,
    /// A case-insensitive substring; blank is none.
    pub filter: Option<String>,
    /// Rows to answer at most ([`MAX_LIST_LIMIT`] when absent).
    pub limit: Option<i64>,
    /// Rows to skip.
    pub offset: Option<i64>,
}

impl Default for OrderedQuery {
    fn default() -> Self {
        Self {
            order_by: None,
            ascending: true,
            filter: None,
            limit: None,
            offset: None,
        }
    }
}

impl OrderedQuery {
    /// The request as the panel's list calls send it (`ascending` true when absent).
    pub fn new(
        order_by: Option<String>,
        ascending: Option<bool>,
        filter: Option<String>,
        limit: Option<i64>,
        offset: Option<i64>,
    ) -> Self {
        Self {
            order_by,
            ascending: ascending.unwrap_or(true),
            filter,
            limit,
            offset,
        }
    }

    /// The request as SQL pieces, by the same rules as [`ListQuery::checked`]
    /// (an unknown `order_by` is 7 naming it), except that a descending
    /// order is the ascending one reversed, ties included (by the id
    /// descending): one index per property serves both directions. Without
    /// `order_by`, by id in `ascending`'s direction.
    pub(crate) fn checked(&self, rules: &ListRules) -> Result<CheckedList> {
        ListQuery {
            sort: rules.order_by(self.order_by.as_deref(), self.ascending)?,
            filter: self.filter.clone(),
            limit: self.limit,
            offset: self.offset,
        }
        .checked_with_ties(rules, !self.ascending)
    }
}

impl ListRules {
    /// The sort items of a list ordered the panel's way: by one property
    /// `order_by` (the rules' properties; 7 naming `order_by` otherwise),
    /// `ascending` unless false; by id without `order_by`.
    fn order_by(&self, order_by: Option<&str>, ascending: bool) -> Result<Vec<String>> {
        let Some(property) = order_by.map(str::trim) else {
            return Ok(Vec::new());
        };
        if !self.properties.iter().any(|(name, _)| *name == property) {
            let names: Vec<&str> = self.properties.iter().map(|(n, _)| *n).collect();
            return Err(Error::invalid(
                "order_by",
                format!("{property:?} is not one of {}", names.join(", ")),
            ));
        }
        let direction = if ascending { "asc" } else { "desc" };
        Ok(vec![format!("{property}={direction}")])
    }
}

/// The `LIKE` pattern (with `ESCAPE '\\'`) finding `needle` anywhere in
/// a lower-cased text: `needle` trimmed and lower-cased, `%`, `_` and `\\`
/// escaped.
pub(crate) fn like_pattern(needle: &str) -> String {
    let mut pattern = String::from("%");
    for c in needle.trim().to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Text lower-cased for a search column (Unicode, as filters are).
pub(crate) fn search_text(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| p.to_lowercase())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: ListRules = ListRules {
        max_sort_items: 2,
        max_filter_chars: 5,
        properties: &[("label", "v.label"), ("id", "v.id")],
        tie_breaker: "v.id",
        min_limit: 0,
    };

    fn query(sort: &[&str], filter: Option<&str>) -> ListQuery {
        ListQuery {
            sort: sort.iter().map(|s| (*s).to_owned()).collect(),
            filter: filter.map(str::to_owned),
            ..ListQuery::default()
        }
    }

    #[test]
    fn sort_items_become_order_by_with_the_id_last() {
        let checked = query(&["label=desc", " id=asc "], None)
            .checked(&RULES)
            .unwrap();
        assert_eq!(checked.order_by, "v.label DESC, v.id ASC, v.id ASC");
        assert_eq!(
            query(&[], None).checked(&RULES).unwrap().order_by,
            "v.id ASC"
        );
        for bad in [
            &["label"][..],
            &["label=up"],
            &["colour=asc"],
            &["label=asc", "id=asc", "id=desc"],
        ] {
            assert!(query(bad, None).checked(&RULES).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_panel_order_descending_is_the_ascending_one_reversed() {
        let order = |order_by: Option<&str>, ascending: bool| {
            OrderedQuery {
                order_by: order_by.map(str::to_owned),
                ascending,
                ..OrderedQuery::default()
            }
            .checked(&RULES)
            .map(|c| c.order_by)
        };
        assert_eq!(order(Some("label"), true).unwrap(), "v.label ASC, v.id ASC");
        assert_eq!(
            order(Some("label"), false).unwrap(),
            "v.label DESC, v.id DESC"
        );
        assert_eq!(order(None, true).unwrap(), "v.id ASC");
        assert_eq!(order(None, false).unwrap(), "v.id DESC");
        assert!(order(Some("colour"), false).is_err());
    }

    #[test]
    fn filters_are_lower_cased_escaped_substrings_and_blank_is_none() {
        let pattern = |f: &str| query(&[], Some(f)).checked(&RULES).map(|c| c.pattern);
        assert_eq!(pattern("ÄB_%").unwrap().as_deref(), Some("%äb\\_\\%%"));
        assert_eq!(pattern("   ").unwrap(), None);
        assert!(pattern("abcde").is_ok());
        assert!(pattern("abcdef").is_err());
    }

    #[test]
    fn a_filter_is_looked_up_as_its_distinct_trigrams_quoted() {
        let trigrams = |f: &str| query(&[], Some(f)).checked(&RULES).unwrap().trigrams();
        assert_eq!(trigrams("Ölölö").as_deref(), Some("\"löl\" AND \"ölö\""));
        assert_eq!(
            trigrams("a\"b c").as_deref(),
            Some("\"\"\"b \" AND \"a\"\"b\" AND \"b c\"")
        );
        assert_eq!(trigrams("ab"), None);
        assert_eq!(trigrams("ab\tc"), None);
    }

    #[test]
    fn limits_beyond_the_maximum_are_212_and_negatives_are_7() {
        let page = |limit: Option<i64>, offset: Option<i64>| {
            ListQuery {
                limit,
                offset,
                ..ListQuery::default()
            }
            .checked(&RULES)
        };
        assert_eq!(page(None, None).unwrap().limit, 10_000);
        assert!(page(Some(10_000), Some(5)).is_ok());
        assert!(matches!(
            page(Some(10_001), None),
            Err(Error::LimitTooBig { .. })
        ));
        assert!(page(Some(-1), None).is_err());
        assert!(page(None, Some(-1)).is_err());
    }
}
