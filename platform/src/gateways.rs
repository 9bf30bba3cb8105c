//! E-mail gateways (spec document 2, `/panel/gateways/email/list`,
//! clarification 53): the SMTP servers a dealer's platform sends mail
//! through. A gateway is a dealer's own or the platform operator's; a
//! `leasable` one is offered to the owner's direct sub-dealers (the
//! operator's to dealers without a parent), who see it without its
//! parameters. A dealer binds one gateway it may use (`bound_gateway`).
//! Only `trackhouse admin email-gateway` makes and binds them.

use std::fmt;
use std::net::IpAddr;

use schemas::DealerId;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Error, Result, Store, check_login, records, trimmed_text};

/// The provider of every dealer's own gateway (document 2: only `smtp`).
pub const SMTP_PROVIDER: &str = "smtp";

/// The `params` of an own gateway: how to reach and use the SMTP server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SmtpParams {
    /// The sender of mail sent through it (an e-mail address).
    pub default_from_address: String,
    /// The SMTP login, or null.
    #[serde(rename = "mail.smtp.user")]
    pub user: Option<String>,
    /// The SMTP password, or null.
    #[serde(rename = "mail.smtp.password")]
    pub password: Option<String>,
    /// The server's host name or IP address.
    #[serde(rename = "mail.smtp.host")]
    pub host: String,
    /// Its port, 1 to 65535.
    #[serde(rename = "mail.smtp.port")]
    #[schema(minimum = 1, maximum = 65535)]
    pub port: i64,
    /// Its TLS port, 1 to 65535.
    #[serde(rename = "mail.smtp.ssl.port")]
    #[schema(minimum = 1, maximum = 65535)]
    pub ssl_port: i64,
    /// Whether any server certificate is trusted.
    #[serde(rename = "mail.smtp.ssl.trust_all_hosts")]
    pub trust_all_hosts: bool,
    /// Whether the server needs a login (then `mail.smtp.user` is set).
    #[serde(rename = "mail.smtp.auth")]
    pub auth: bool,
    /// Whether the exchange is logged.
    #[serde(rename = "mail.debug")]
    pub debug: bool,
    /// Whether STARTTLS is used when offered.
    #[serde(rename = "mail.smtp.starttls.enable")]
    pub starttls_enable: bool,
    /// Whether STARTTLS is required (it is then enabled too).
    #[serde(rename = "mail.smtp.starttls.required")]
    pub starttls_required: bool,
    /// Whether the connection is TLS from the start.
    #[serde(rename = "mail.smtp.use_ssl")]
    pub use_ssl: bool,
    /// Longest wait for an answer, 1 to 600,000 milliseconds.
    #[serde(rename = "mail.smtp.timeout")]
    #[schema(minimum = 1, maximum = 600000)]
    pub timeout_ms: i64,
    /// Longest wait for a connection, 1 to 600,000 milliseconds.
    #[serde(rename = "mail.smtp.connectiontimeout")]
    #[schema(minimum = 1, maximum = 600000)]
    pub connection_timeout_ms: i64,
    /// `smtp` or `smtps`.
    #[serde(rename = "mail.transport.protocol")]
    pub protocol: String,
}

// By hand: the SMTP password never reaches a log.
impl fmt::Debug for SmtpParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpParams")
            .field("default_from_address", &self.default_from_address)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("ssl_port", &self.ssl_port)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

/// Longest wait an SMTP timeout may state, in milliseconds (ten minutes).
pub const MAX_SMTP_TIMEOUT_MS: i64 = 600_000;

impl SmtpParams {
    /// The parameters checked and trimmed; errors name the member
    /// (`params.mail.smtp.port`).
    fn checked(self) -> Result<Self> {
        let default_from_address =
            check_login("params.default_from_address", &self.default_from_address)?;
        let user = optional_secret("params.mail.smtp.user", self.user)?;
        let password = optional_secret("params.mail.smtp.password", self.password)?;
        let host = host("params.mail.smtp.host", &self.host)?;
        for (field, port) in [
            ("params.mail.smtp.port", self.port),
            ("params.mail.smtp.ssl.port", self.ssl_port),
        ] {
            if !(1..=65_535).contains(&port) {
                return Err(Error::invalid(field, "must be 1 to 65535"));
            }
        }
        for (field, ms) in [
            ("params.mail.smtp.timeout", self.timeout_ms),
            (
                "params.mail.smtp.connectiontimeout",
                self.connection_timeout_ms,
            ),
        ] {
            if !(1..=MAX_SMTP_TIMEOUT_MS).contains(&ms) {
                return Err(Error::invalid(
                    field,
                    format!("must be 1 to {MAX_SMTP_TIMEOUT_MS} milliseconds"),
                ));
            }
        }
        if self.auth && user.is_none() {
            return Err(Error::invalid(
                "params.mail.smtp.user",
                "is required when mail.smtp.auth is true",
            ));
        }
        if self.starttls_required && !self.starttls_enable {
            return Err(Error::invalid(
                "params.mail.smtp.starttls.enable",
                "must be true when mail.smtp.starttls.required is",
            ));
        }
        let protocol = self.protocol.trim().to_ascii_lowercase();
        if !matches!(protocol.as_str(), "smtp" | "smtps") {
            return Err(Error::invalid(
                "params.mail.transport.protocol",
                "must be smtp or smtps",
            ));
        }
        Ok(Self {
            default_from_address,
            user,
            password,
            host,
            protocol,
            ..self
        })
    }
}

/// A login or password of the SMTP server: null, or 1 to 255 printable
/// characters kept as given (spaces may be part of a password).
fn optional_secret(field: &'static str, value: Option<String>) -> Result<Option<String>> {
    match value {
        None => Ok(None),
        Some(v) => {
            crate::check_printable(field, &v, 1, 255)?;
            Ok(Some(v))
        }
    }
}

/// A host name (labels of letters, digits and inner hyphens) or an IP
/// address; stored lower-cased.
fn host(field: &'static str, text: &str) -> Result<String> {
    let name = text.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.parse::<IpAddr>().is_ok() {
        return Ok(name);
    }
    let valid = (1..=253).contains(&name.len())
        && name.split('.').all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        });
    if valid {
        Ok(name)
    } else {
        Err(Error::invalid(
            field,
            "must be a host name like smtp.example.com or an IP address",
        ))
    }
}

/// A provider of the operator's gateways: 1 to 64 lower-case letters,
/// digits, `_`, `-` or `.`.
fn provider(text: &str) -> Result<String> {
    let name = text.trim().to_ascii_lowercase();
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if valid {
        Ok(name)
    } else {
        Err(Error::invalid(
            "provider",
            "must be 1 to 64 letters, digits, `_`, `-` or `.`",
        ))
    }
}

/// A gateway as its owner sees it (document 2's own gateway object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OwnGateway {
    /// Its id.
    pub id: i64,
    /// Whether the owner's sub-dealers may use it.
    pub leasable: bool,
    /// Its label.
    pub label: String,
    /// `smtp`.
    pub provider: String,
    /// How to reach and use the server.
    pub params: SmtpParams,
}

/// A gateway a dealer may lease (document 2's leased gateway object):
/// its owner's, shown without the parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct LeasedGateway {
    /// Its id.
    pub id: i64,
    /// Its label.
    pub label: String,
    /// The sender of mail sent through it.
    pub default_from_address: String,
    /// Its provider (a vendor's name for the operator's gateways).
    pub provider: String,
}

/// What `gateways/email/list` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EmailGateways {
    /// The gateway the dealer sends with, or null.
    pub bound_gateway: Option<i64>,
    /// The dealer's own gateways, by id.
    pub own: Vec<OwnGateway>,
    /// Gateways the dealer may lease, by id.
    pub leasable: Vec<LeasedGateway>,
}

/// A gateway to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEmailGateway {
    /// The owner; `None` for the platform operator.
    pub dealer: Option<DealerId>,
    /// Label, 1 to 255 characters.
    pub label: String,
    /// `smtp` for a dealer's gateway; a vendor's name for the operator's.
    pub provider: String,
    /// Whether the owner's sub-dealers (the operator's: dealers without a parent) may use it.
    pub leasable: bool,
    /// How to reach and use the server.
    pub params: SmtpParams,
}

impl OwnGateway {
    fn from_row(row: &SqliteRow) -> Result<Self> {
        let params: String = row.try_get("params")?;
        Ok(Self {
            id: row.try_get("id")?,
            leasable: row.try_get("leasable")?,
            label: row.try_get("label")?,
            provider: row.try_get("provider")?,
            params: serde_json::from_str(&params)
                .map_err(|e| Error::corrupt("email_gateways.params", e))?,
        })
    }

    fn leased(self) -> LeasedGateway {
        LeasedGateway {
            id: self.id,
            label: self.label,
            default_from_address: self.params.default_from_address,
            provider: self.provider,
        }
    }
}

/// Gateways the dealer `$1` may lease: those its parent (the operator for a
/// dealer without one) offers.
const LEASABLE: &str = "SELECT g.* FROM email_gateways g JOIN dealers d ON d.id = $1 \
                        WHERE g.leasable = TRUE AND g.dealer_id IS d.parent_dealer_id";

impl Store {
    /// Makes a gateway; it as its owner sees it. 201 for an unknown dealer.
    pub async fn create_email_gateway(&self, new: NewEmailGateway) -> Result<OwnGateway> {
        let label = trimmed_text("label", &new.label, 1, 255)?;
        let provider = match new.dealer {
            Some(_) if new.provider.trim() != SMTP_PROVIDER => {
                return Err(Error::invalid(
                    "provider",
                    "a dealer's own gateway is `smtp` (document 2)",
                ));
            }
            Some(_) => SMTP_PROVIDER.to_owned(),
            None => provider(&new.provider)?,
        };
        let params = new.params.checked()?;
        let json = serde_json::to_string(&params).map_err(|e| Error::corrupt("params", e))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO email_gateways (dealer_id, label, provider, leasable, params, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(new.dealer.map(|d| d.0))
        .bind(&label)
        .bind(&provider)
        .bind(new.leasable)
        .bind(json)
        .bind(self.clock.now())
        .fetch_one(&self.pool)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => {
                records::not_found("dealer", new.dealer.map_or(0, |d| d.0))
            }
            _ => Error::from(e),
        })?;
        Ok(OwnGateway {
            id,
            leasable: new.leasable,
            label,
            provider,
            params,
        })
    }

    /// `gateways/email/list`: the dealer's bound gateway, own gateways and
    /// those it may lease, read in one transaction. 201 for an unknown dealer.
    pub async fn email_gateways(&self, dealer: DealerId) -> Result<EmailGateways> {
        let mut tx = self.pool.begin().await?;
        let bound: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT b.gateway_id FROM dealers d \
             LEFT JOIN dealer_email_gateways b ON b.dealer_id = d.id WHERE d.id = $1",
        )
        .bind(dealer.0)
        .fetch_optional(&mut *tx)
        .await?;
        let bound_gateway = bound.ok_or_else(|| records::not_found("dealer", dealer.0))?;
        let own = sqlx::query("SELECT * FROM email_gateways WHERE dealer_id = $1 ORDER BY id")
            .bind(dealer.0)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(OwnGateway::from_row)
            .collect::<Result<_>>()?;
        let leasable = sqlx::query(&format!("{LEASABLE} ORDER BY g.id"))
            .bind(dealer.0)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|row| OwnGateway::from_row(row).map(OwnGateway::leased))
            .collect::<Result<_>>()?;
        tx.commit().await?;
        Ok(EmailGateways {
            bound_gateway,
            own,
            leasable,
        })
    }

    /// Makes `gateway` the one the dealer sends with, or none: it must be
    /// the dealer's own or one it may lease (201 otherwise, as for an
    /// unknown dealer).
    pub async fn bind_email_gateway(&self, dealer: DealerId, gateway: Option<i64>) -> Result<()> {
        let mut tx = self.write_tx().await?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM dealers WHERE id = $1")
            .bind(dealer.0)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(records::not_found("dealer", dealer.0));
        }
        match gateway {
            None => {
                sqlx::query("DELETE FROM dealer_email_gateways WHERE dealer_id = $1")
                    .bind(dealer.0)
                    .execute(&mut *tx)
                    .await?;
            }
            Some(gateway) => {
                let usable: Option<i64> = sqlx::query_scalar(&format!(
                    "SELECT id FROM email_gateways WHERE id = $2 AND dealer_id = $1 \
                     UNION SELECT g.id FROM ({LEASABLE}) g WHERE g.id = $2"
                ))
                .bind(dealer.0)
                .bind(gateway)
                .fetch_optional(&mut *tx)
                .await?;
                if usable.is_none() {
                    return Err(records::not_found("e-mail gateway", gateway));
                }
                sqlx::query(
                    "INSERT INTO dealer_email_gateways (dealer_id, gateway_id) VALUES ($1, $2) \
                     ON CONFLICT (dealer_id) DO UPDATE SET gateway_id = excluded.gateway_id",
                )
                .bind(dealer.0)
                .bind(gateway)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SmtpParams {
        SmtpParams {
            default_from_address: " Fleet@Example.COM ".into(),
            user: Some("mailer".into()),
            password: Some("s3cret pw".into()),
            host: "SMTP.Example.com.".into(),
            port: 587,
            ssl_port: 465,
            trust_all_hosts: false,
            auth: true,
            debug: false,
            starttls_enable: true,
            starttls_required: true,
            use_ssl: false,
            timeout_ms: 10_000,
            connection_timeout_ms: 10_000,
            protocol: "SMTP".into(),
        }
    }

    #[test]
    fn params_are_normalised_and_the_password_kept_as_given() {
        let checked = params().checked().unwrap();
        assert_eq!(checked.default_from_address, "fleet@example.com");
        assert_eq!(checked.host, "smtp.example.com");
        assert_eq!(checked.protocol, "smtp");
        assert_eq!(checked.password.as_deref(), Some("s3cret pw"));
        let json = serde_json::to_value(&checked).unwrap();
        assert_eq!(json["mail.smtp.port"], 587);
        assert_eq!(json["mail.smtp.starttls.required"], true);
        assert!(!format!("{checked:?}").contains("s3cret"));
    }

    /// Spoils one member of valid parameters.
    type Spoil = fn(&mut SmtpParams);

    #[test]
    fn each_bad_member_is_named() {
        let cases: [(Spoil, &str); 9] = [
            (
                |p| p.default_from_address = "nobody".into(),
                "default_from_address",
            ),
            (|p| p.host = "bad host".into(), "mail.smtp.host"),
            (|p| p.host = "-a.example.com".into(), "mail.smtp.host"),
            (|p| p.port = 0, "mail.smtp.port"),
            (|p| p.ssl_port = 65_536, "mail.smtp.ssl.port"),
            (|p| p.timeout_ms = 0, "mail.smtp.timeout"),
            (|p| p.user = None, "mail.smtp.user"),
            (|p| p.starttls_enable = false, "mail.smtp.starttls.enable"),
            (|p| p.protocol = "imap".into(), "mail.transport.protocol"),
        ];
        for (spoil, member) in cases {
            let mut p = params();
            spoil(&mut p);
            let err = p.checked().unwrap_err().to_string();
            assert!(err.contains(member), "{member}: {err}");
        }
        let mut ip = params();
        ip.host = "192.0.2.7".into();
        assert_eq!(ip.checked().unwrap().host, "192.0.2.7");
    }
}
