//! `trackhouse admin dealer|paas-tariff`: dealers with their panel
//! accounts, and the PaaS plans the platform operator sells them (the
//! `tariff` of `panel/dealer/get_info`).

use clap::Subcommand;
use platform::{
    BlockStatus, ContractType, NewDealer, NewPaasTariff, Permission, ServicePrices, StorePeriod,
};
use schemas::DealerId;
use serde_json::{Value, json};

use super::parse_list;

#[derive(Debug, Subcommand)]
pub(super) enum DealerCommand {
    /// Create a dealer with its panel account → `{"dealer_id":N}` (and
    /// `"tariff_id":N` with `--tariff`).
    Create {
        /// Title.
        #[arg(long)]
        title: String,
        /// Panel login: the dealer's numeric id (default: the next free id).
        #[arg(long)]
        panel_login: Option<i64>,
        /// Panel password (6 to 40 printable characters).
        #[arg(long)]
        panel_password: String,
        /// Contract type: PARTNER, AGENT or PAAS.
        #[arg(long, default_value = "PAAS")]
        contract_type: String,
        /// Panel permissions, comma-separated `group:permission` (default: all).
        #[arg(long, value_delimiter = ',')]
        permissions: Option<Vec<String>>,
        /// Time zone of the dealer's new users.
        #[arg(long, default_value = "UTC")]
        time_zone: String,
        /// The PaaS plan it is on (default: 1, "PaaS Standard"). An unknown
        /// plan is 201, and no dealer is made.
        #[arg(long)]
        tariff: Option<i64>,
    },
    /// Put a dealer on another PaaS plan, from its next call on → `{"dealer_id":N,"tariff_id":N}`.
    Update {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
        /// The PaaS plan (unknown: 201).
        #[arg(long)]
        tariff: i64,
    },
    /// Block a dealer → `{"dealer_id":N,"block_status":".."}`.
    Block {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
        /// INITIAL_BLOCK, BLOCK_LOGIN (panel only) or CLIENTS_BLOCKED (panel and users).
        #[arg(long, default_value = "CLIENTS_BLOCKED")]
        status: String,
    },
    /// Unblock a dealer → `{"dealer_id":N,"block_status":"NOT_BLOCKED"}`.
    Unblock {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
    },
    /// Mark a dealer deleted: its records stay, its panel sessions end, its
    /// panel login is refused, and as a sub-dealer it reads `DELETED` →
    /// `{"dealer_id":N,"deleted":true}`.
    Delete {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum PaasTariffCommand {
    /// Create a PaaS plan → `{"paas_tariff_id":N}`.
    Create {
        /// Name, 1 to 255 characters, unique (244 otherwise).
        #[arg(long)]
        name: String,
        /// Currency of its prices (ISO 4217).
        #[arg(long, default_value = "USD")]
        currency: String,
        /// Price of a license.
        #[arg(long, allow_hyphen_values = true)]
        license_price: Option<f64>,
        /// Least license payment.
        #[arg(long, allow_hyphen_values = true)]
        min_license_pay: Option<f64>,
        /// Prices include VAT.
        #[arg(long)]
        vat: bool,
        /// A trial plan (`demo_tariff` in dealer info).
        #[arg(long)]
        trial: bool,
        /// Premium maps and geocoding.
        #[arg(long)]
        premium_gis: bool,
        /// Longest data store period its dealers may sell: 2h, 3d, 12m, 1y.
        #[arg(long, default_value = "1y")]
        store_period: String,
        /// Its dealers may not have sub-dealers (`panel/subpaas/*` answer 13).
        #[arg(long)]
        no_subpaas: bool,
        /// What its dealers pay for services, as JSON:
        /// `{"incoming_sms":0.01,"outgoing_sms":0.02,"service_sms":0,"phone_call":0.1,"traffic":0.005}`.
        #[arg(long)]
        service_prices: Option<String>,
    },
}

pub(super) async fn dealer(
    store: &platform::Store,
    command: DealerCommand,
) -> platform::Result<Value> {
    Ok(match command {
        DealerCommand::Create {
            title,
            panel_login,
            panel_password,
            contract_type,
            permissions,
            time_zone,
            tariff,
        } => {
            let permissions = permissions
                .map(|names| parse_list("permissions", &names, Permission::parse_lenient))
                .transpose()?;
            let new = NewDealer {
                id: panel_login.map(DealerId),
                title,
                panel_password,
                contract_type: ContractType::parse("contract_type", &contract_type)?,
                permissions,
                default_user_time_zone: time_zone,
            };
            match tariff {
                None => json!({"dealer_id": store.create_dealer(new).await?}),
                Some(tariff) => {
                    let id = store.create_dealer_on(new, tariff).await?;
                    json!({"dealer_id": id, "tariff_id": tariff})
                }
            }
        }
        DealerCommand::Update { dealer_id, tariff } => {
            store
                .set_dealer_paas_tariff(DealerId(dealer_id), tariff)
                .await?;
            json!({"dealer_id": dealer_id, "tariff_id": tariff})
        }
        DealerCommand::Block { dealer_id, status } => {
            let status = BlockStatus::parse("status", &status)?;
            store
                .set_dealer_block_status(DealerId(dealer_id), status)
                .await?;
            json!({"dealer_id": dealer_id, "block_status": status})
        }
        DealerCommand::Unblock { dealer_id } => {
            store
                .set_dealer_block_status(DealerId(dealer_id), BlockStatus::NotBlocked)
                .await?;
            json!({"dealer_id": dealer_id, "block_status": BlockStatus::NotBlocked})
        }
        DealerCommand::Delete { dealer_id } => {
            store.mark_dealer_deleted(DealerId(dealer_id)).await?;
            json!({"dealer_id": dealer_id, "deleted": true})
        }
    })
}

pub(super) async fn paas_tariff(
    store: &platform::Store,
    command: PaasTariffCommand,
) -> platform::Result<Value> {
    let PaasTariffCommand::Create {
        name,
        currency,
        license_price,
        min_license_pay,
        vat,
        trial,
        premium_gis,
        store_period,
        no_subpaas,
        service_prices,
    } = command;
    let service_prices = match service_prices {
        None => ServicePrices::default(),
        Some(text) => prices(&text)?,
    };
    let id = store
        .create_paas_tariff(NewPaasTariff {
            name,
            currency,
            license_price,
            min_license_pay,
            vat,
            trial,
            premium_gis,
            service_prices,
            store_period: StorePeriod::parse("store_period", &store_period)?,
            allows_subpaas: !no_subpaas,
        })
        .await?;
    Ok(json!({"paas_tariff_id": id}))
}

/// `--service-prices`: a JSON object of prices.
fn prices(text: &str) -> platform::Result<ServicePrices> {
    let invalid = |reason: String| platform::Error::InvalidArgument {
        field: "service_prices".into(),
        reason,
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("must be a JSON object of prices: {e}")))?;
    if !value.is_object() {
        return Err(invalid("must be a JSON object of prices".into()));
    }
    // The prices themselves are checked by `Store::create_paas_tariff`.
    serde_json::from_value(value)
        .map_err(|e| invalid(format!("must be a JSON object of prices: {e}")))
}
