//! Orders of tracker bundles (spec document 2, `/panel/order/read`,
//! clarification 53): what a dealer's master user ordered (devices with
//! their SIM cards, or a service), its status, and the bundles assigned to
//! it. Only `trackhouse admin order` makes them; the panel reads the
//! dealer's own (another dealer's is 201, its parent's and sub-dealers' too).

use chrono::{DateTime, Utc};
use schemas::{DealerId, UserId};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::{Error, Result, Store, records, trimmed_text};

/// Bundles one order holds at most.
pub const MAX_ORDER_BUNDLES: usize = 1_000;

/// Where an order stands (clarification 53).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    /// Placed.
    Created,
    /// Paid.
    Settled,
    /// Its devices are gathered.
    Gathered,
    /// Shipped whole.
    Shipped,
    /// Shipped in part.
    ShippedPartially,
    /// Cancelled.
    Canceled,
}

/// What an order is for (clarification 53).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderType {
    /// A bank payment.
    Bank,
    /// Equipment.
    Equip,
    /// A service, paid by bank.
    BankService,
    /// A license, paid by bank.
    BankLicense,
    /// A camera license, paid by bank.
    BankLicenseCamera,
}

impl OrderStatus {
    /// Every status, in the clarification's order.
    pub const ALL: &'static [Self] = &[
        Self::Created,
        Self::Settled,
        Self::Gathered,
        Self::Shipped,
        Self::ShippedPartially,
        Self::Canceled,
    ];

    /// The status as the spec writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Settled => "settled",
            Self::Gathered => "gathered",
            Self::Shipped => "shipped",
            Self::ShippedPartially => "shipped_partially",
            Self::Canceled => "canceled",
        }
    }

    /// Parses the spec's spelling; `field` names the parameter in the error.
    pub fn parse(field: &'static str, text: &str) -> Result<Self> {
        parse_named(field, text, Self::ALL, |s| s.as_str())
    }
}

impl OrderType {
    /// Every type, in the clarification's order.
    pub const ALL: &'static [Self] = &[
        Self::Bank,
        Self::Equip,
        Self::BankService,
        Self::BankLicense,
        Self::BankLicenseCamera,
    ];

    /// The type as the spec writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bank => "bank",
            Self::Equip => "equip",
            Self::BankService => "bank_service",
            Self::BankLicense => "bank_license",
            Self::BankLicenseCamera => "bank_license_camera",
        }
    }

    /// Parses the spec's spelling; `field` names the parameter in the error.
    pub fn parse(field: &'static str, text: &str) -> Result<Self> {
        parse_named(field, text, Self::ALL, |t| t.as_str())
    }
}

fn parse_named<T: Copy>(
    field: &'static str,
    text: &str,
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<T> {
    let text = text.trim();
    all.iter()
        .copied()
        .find(|v| name(*v) == text)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
            Error::invalid(field, format!("must be one of {}", names.join(", ")))
        })
}

/// A device of an order (document 2's bundle object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Bundle {
    /// Its id.
    pub id: i64,
    /// The equipment's id in the seller's catalogue.
    pub equip_id: i64,
    /// Its order.
    pub order_id: i64,
    /// The maker.
    pub equip_vendor: String,
    /// The equipment's name.
    pub equip_name: String,
    /// Its model.
    pub equip_model: String,
    /// Its model code.
    pub model_code: String,
    /// The device's IMEI.
    pub imei: String,
    /// Its SIM card's ICCID.
    pub iccid: String,
    /// When it was assigned to the order (UTC, `YYYY-MM-DD HH:MM:SS`).
    pub assign_time: String,
}

/// Document 2's order object.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Order {
    /// Its id.
    pub id: i64,
    /// The dealer's master user it is for.
    pub user_id: i64,
    /// Who sells it (the dealer, unless the operator named another).
    pub seller_id: i64,
    /// How many devices or licenses.
    pub amount: i64,
    /// What it costs.
    pub sum: f64,
    /// What it is for.
    #[serde(rename = "type")]
    pub order_type: OrderType,
    /// Who pays.
    pub payer: String,
    /// Who receives it.
    pub recipient: String,
    /// How to reach the recipient.
    pub contacts: String,
    /// Where it goes.
    pub place: String,
    /// A comment.
    pub comment: String,
    /// When it was placed (UTC, `YYYY-MM-DD HH:MM:SS`).
    pub creation_time: String,
    /// Where it stands.
    pub status: OrderStatus,
    /// Its devices, by id.
    pub bundles: Vec<Bundle>,
}

/// A device to add to a new order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewBundle {
    /// The equipment's id in the seller's catalogue (0 or more).
    pub equip_id: i64,
    /// The maker, at most 255 characters.
    pub equip_vendor: String,
    /// The name, at most 255 characters.
    pub equip_name: String,
    /// The model, at most 255 characters.
    pub equip_model: String,
    /// The model code, at most 255 characters.
    pub model_code: String,
    /// The IMEI: empty or 1 to 32 printable characters.
    pub imei: String,
    /// The ICCID: empty or 1 to 32 printable characters.
    pub iccid: String,
}

/// An order to make.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOrder {
    /// The dealer whose order it is.
    pub dealer: DealerId,
    /// A live master user of the dealer (201 otherwise).
    pub user_id: UserId,
    /// Who sells it; `None`: the dealer.
    pub seller_id: Option<i64>,
    /// What it is for.
    pub order_type: OrderType,
    /// Where it stands.
    pub status: OrderStatus,
    /// How many; `None`: the number of bundles.
    pub amount: Option<i64>,
    /// What it costs (0 or more).
    pub sum: f64,
    /// Who pays, at most 255 characters.
    pub payer: String,
    /// Who receives it, at most 255 characters.
    pub recipient: String,
    /// How to reach the recipient, at most 255 characters.
    pub contacts: String,
    /// Where it goes, at most 255 characters.
    pub place: String,
    /// A comment, at most 1,024 characters.
    pub comment: String,
    /// Its devices (at most 1,000).
    pub bundles: Vec<NewBundle>,
}

fn utc(instant: DateTime<Utc>) -> String {
    instant.format("%Y-%m-%d %H:%M:%S").to_string()
}

impl Bundle {
    fn from_row(row: &SqliteRow) -> Result<Self> {
        Ok(Self {
            id: row.try_get("id")?,
            equip_id: row.try_get("equip_id")?,
            order_id: row.try_get("order_id")?,
            equip_vendor: row.try_get("equip_vendor")?,
            equip_name: row.try_get("equip_name")?,
            equip_model: row.try_get("equip_model")?,
            model_code: row.try_get("model_code")?,
            imei: row.try_get("imei")?,
            iccid: row.try_get("iccid")?,
            assign_time: utc(row.try_get("assign_time")?),
        })
    }
}

impl Order {
    fn from_row(row: &SqliteRow, bundles: Vec<Bundle>) -> Result<Self> {
        let order_type: String = row.try_get("order_type")?;
        let status: String = row.try_get("status")?;
        Ok(Self {
            id: row.try_get("id")?,
            user_id: row.try_get("user_id")?,
            seller_id: row.try_get("seller_id")?,
            amount: row.try_get("amount")?,
            sum: row.try_get("order_sum")?,
            order_type: OrderType::parse("type", &order_type)
                .map_err(|e| Error::corrupt("orders.order_type", e))?,
            payer: row.try_get("payer")?,
            recipient: row.try_get("recipient")?,
            contacts: row.try_get("contacts")?,
            place: row.try_get("place")?,
            comment: row.try_get("comment")?,
            creation_time: utc(row.try_get("created_at")?),
            status: OrderStatus::parse("status", &status)
                .map_err(|e| Error::corrupt("orders.status", e))?,
            bundles,
        })
    }
}

impl NewBundle {
    fn checked(self, i: usize) -> Result<Self> {
        let field = |member: &str| format!("bundles[{i}].{member}");
        if self.equip_id < 0 {
            return Err(Error::invalid(field("equip_id"), "must be 0 or more"));
        }
        Ok(Self {
            equip_id: self.equip_id,
            equip_vendor: trimmed_text(field("equip_vendor"), &self.equip_vendor, 0, 255)?,
            equip_name: trimmed_text(field("equip_name"), &self.equip_name, 0, 255)?,
            equip_model: trimmed_text(field("equip_model"), &self.equip_model, 0, 255)?,
            model_code: trimmed_text(field("model_code"), &self.model_code, 0, 255)?,
            imei: trimmed_text(field("imei"), &self.imei, 0, 32)?,
            iccid: trimmed_text(field("iccid"), &self.iccid, 0, 32)?,
        })
    }
}

impl Store {
    /// Makes an order with its bundles (assigned now), in one transaction;
    /// it as `order/read` answers it. 201 for an unknown dealer, or a user
    /// who is not a live master user of the dealer.
    pub async fn create_order(&self, new: NewOrder) -> Result<Order> {
        if new.bundles.len() > MAX_ORDER_BUNDLES {
            return Err(Error::invalid(
                "bundles",
                format!("at most {MAX_ORDER_BUNDLES} per order"),
            ));
        }
        if !(new.sum.is_finite() && new.sum >= 0.0) {
            return Err(Error::invalid("sum", "must be 0 or more"));
        }
        if new.amount.is_some_and(|a| a < 0) {
            return Err(Error::invalid("amount", "must be 0 or more"));
        }
        if new.seller_id.is_some_and(|s| s < 0) {
            return Err(Error::invalid("seller_id", "must be 0 or more"));
        }
        let payer = trimmed_text("payer", &new.payer, 0, 255)?;
        let recipient = trimmed_text("recipient", &new.recipient, 0, 255)?;
        let contacts = trimmed_text("contacts", &new.contacts, 0, 255)?;
        let place = trimmed_text("place", &new.place, 0, 255)?;
        let comment = trimmed_text("comment", &new.comment, 0, 1024)?;
        let bundles = new
            .bundles
            .into_iter()
            .enumerate()
            .map(|(i, b)| b.checked(i))
            .collect::<Result<Vec<_>>>()?;
        let amount = match new.amount {
            Some(amount) => amount,
            None => i64::try_from(bundles.len()).unwrap_or(i64::MAX),
        };
        let now = self.clock.now();
        let mut tx = self.write_tx().await?;
        let dealer: Option<i64> = sqlx::query_scalar("SELECT id FROM dealers WHERE id = $1")
            .bind(new.dealer.0)
            .fetch_optional(&mut *tx)
            .await?;
        if dealer.is_none() {
            return Err(records::not_found("dealer", new.dealer.0));
        }
        let user: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM users WHERE id = $1 AND dealer_id = $2 \
             AND master_user_id IS NULL AND deleted = FALSE",
        )
        .bind(new.user_id.0)
        .bind(new.dealer.0)
        .fetch_optional(&mut *tx)
        .await?;
        if user.is_none() {
            return Err(Error::NotFound {
                entity: "master user of the dealer",
                id: new.user_id.to_string(),
            });
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO orders (dealer_id, user_id, seller_id, amount, order_sum, order_type, \
             status, payer, recipient, contacts, place, comment, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        )
        .bind(new.dealer.0)
        .bind(new.user_id.0)
        .bind(new.seller_id.unwrap_or(new.dealer.0))
        .bind(amount)
        .bind(new.sum)
        .bind(new.order_type.as_str())
        .bind(new.status.as_str())
        .bind(payer)
        .bind(recipient)
        .bind(contacts)
        .bind(place)
        .bind(comment)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        for bundle in bundles {
            sqlx::query(
                "INSERT INTO order_bundles (order_id, equip_id, equip_vendor, equip_name, \
                 equip_model, model_code, imei, iccid, assign_time) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(id)
            .bind(bundle.equip_id)
            .bind(bundle.equip_vendor)
            .bind(bundle.equip_name)
            .bind(bundle.equip_model)
            .bind(bundle.model_code)
            .bind(bundle.imei)
            .bind(bundle.iccid)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        let order = read_order(&mut tx, new.dealer, id).await?;
        tx.commit().await?;
        Ok(order)
    }

    /// `order/read`: the dealer's order `id`; 201 for an unknown order or
    /// another dealer's.
    pub async fn order(&self, dealer: DealerId, id: i64) -> Result<Order> {
        let mut tx = self.pool.begin().await?;
        let order = read_order(&mut tx, dealer, id).await?;
        tx.commit().await?;
        Ok(order)
    }

    /// The dealer's orders, by id (`trackhouse admin order list`); 201 for
    /// an unknown dealer.
    pub async fn orders(&self, dealer: DealerId) -> Result<Vec<Order>> {
        let mut tx = self.pool.begin().await?;
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM dealers WHERE id = $1")
            .bind(dealer.0)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(records::not_found("dealer", dealer.0));
        }
        let ids: Vec<i64> =
            sqlx::query_scalar("SELECT id FROM orders WHERE dealer_id = $1 ORDER BY id")
                .bind(dealer.0)
                .fetch_all(&mut *tx)
                .await?;
        let mut orders = Vec::with_capacity(ids.len());
        for id in ids {
            orders.push(read_order(&mut tx, dealer, id).await?);
        }
        tx.commit().await?;
        Ok(orders)
    }
}

/// The order `id` of `dealer` with its bundles, within one transaction.
async fn read_order(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    dealer: DealerId,
    id: i64,
) -> Result<Order> {
    let row = sqlx::query("SELECT * FROM orders WHERE id = $1 AND dealer_id = $2")
        .bind(id)
        .bind(dealer.0)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| records::not_found("order", id))?;
    let bundles = sqlx::query("SELECT * FROM order_bundles WHERE order_id = $1 ORDER BY id")
        .bind(id)
        .fetch_all(&mut **tx)
        .await?
        .iter()
        .map(Bundle::from_row)
        .collect::<Result<_>>()?;
    Order::from_row(&row, bundles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_read_and_write_the_clarifications_names() {
        for status in OrderStatus::ALL {
            assert_eq!(
                OrderStatus::parse("status", status.as_str()).unwrap(),
                *status
            );
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for order_type in OrderType::ALL {
            assert_eq!(
                OrderType::parse("type", order_type.as_str()).unwrap(),
                *order_type
            );
            assert_eq!(
                serde_json::to_value(order_type).unwrap(),
                order_type.as_str()
            );
        }
        let err = OrderStatus::parse("status", "lost")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("status") && err.contains("shipped_partially"),
            "{err}"
        );
    }
}
