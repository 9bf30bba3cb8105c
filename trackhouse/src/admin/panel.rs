//! `trackhouse admin email-gateway|order`: the dealer panel's records that
//! no call of the spec creates (clarification 53), read by
//! `panel/gateways/email/list` and `panel/order/read`.

use clap::Subcommand;
use platform::{NewBundle, NewEmailGateway, NewOrder, OrderStatus, OrderType, SmtpParams};
use schemas::{DealerId, UserId};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Subcommand)]
pub(super) enum EmailGatewayCommand {
    /// Create an SMTP gateway of a dealer, or of the platform operator →
    /// the gateway as its owner sees it (`own` of the list).
    Create(Box<GatewayArgs>),
    /// What `panel/gateways/email/list` answers the dealer →
    /// `{"bound_gateway":N|null,"own":[..],"leasable":[..]}`.
    List {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
    },
    /// Make a gateway the one the dealer sends with: its own or one it may
    /// lease (else 201) → `{"dealer_id":N,"bound_gateway":N}`.
    Bind {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
        /// The gateway.
        #[arg(long)]
        gateway_id: i64,
    },
    /// Bind no gateway → `{"dealer_id":N,"bound_gateway":null}`.
    Unbind {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum OrderCommand {
    /// Create an order of a dealer's master user → the order as `panel/order/read` answers it.
    Create(Box<OrderArgs>),
    /// The dealer's orders, by id → `{"orders":[..]}`.
    List {
        /// The dealer.
        #[arg(long)]
        dealer_id: i64,
    },
}

/// `email-gateway create`.
#[derive(Debug, clap::Args)]
pub(super) struct GatewayArgs {
    /// The owner (omit for the platform operator's gateway).
    #[arg(long)]
    dealer_id: Option<i64>,
    /// Label (1 to 255 characters).
    #[arg(long)]
    label: String,
    /// `smtp` for a dealer's gateway; a vendor's name for the operator's.
    #[arg(long, default_value = platform::SMTP_PROVIDER)]
    provider: String,
    /// Offer it to the owner's direct sub-dealers (the operator's: to
    /// dealers without a parent), who see it without its parameters.
    #[arg(long)]
    leasable: bool,
    /// The sender of mail sent through it (an e-mail address).
    #[arg(long)]
    from_address: String,
    /// The SMTP server's host name or IP address.
    #[arg(long)]
    host: String,
    /// Its port.
    #[arg(long, default_value_t = 587)]
    port: i64,
    /// Its TLS port.
    #[arg(long, default_value_t = 465)]
    ssl_port: i64,
    /// The SMTP login.
    #[arg(long)]
    user: Option<String>,
    /// The SMTP password.
    #[arg(long)]
    password: Option<String>,
    /// The server needs a login (`--user`).
    #[arg(long)]
    auth: bool,
    /// Use STARTTLS when offered.
    #[arg(long)]
    starttls: bool,
    /// Require STARTTLS (needs `--starttls`).
    #[arg(long)]
    starttls_required: bool,
    /// TLS from the start.
    #[arg(long)]
    use_ssl: bool,
    /// Trust any server certificate.
    #[arg(long)]
    trust_all_hosts: bool,
    /// Log the SMTP exchange.
    #[arg(long)]
    debug: bool,
    /// Longest wait for an answer, milliseconds (1 to 600000).
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: i64,
    /// Longest wait for a connection, milliseconds (1 to 600000).
    #[arg(long, default_value_t = 10_000)]
    connection_timeout_ms: i64,
    /// `smtp` or `smtps`.
    #[arg(long, default_value = "smtp")]
    protocol: String,
}

/// `order create`.
#[derive(Debug, clap::Args)]
pub(super) struct OrderArgs {
    /// The dealer.
    #[arg(long)]
    dealer_id: i64,
    /// A master user of the dealer (another's: 201).
    #[arg(long)]
    user_id: i64,
    /// bank, equip, bank_service, bank_license or bank_license_camera.
    #[arg(long = "type")]
    order_type: String,
    /// created, settled, gathered, shipped, shipped_partially or canceled.
    #[arg(long, default_value = "created")]
    status: String,
    /// Who sells it (default: the dealer).
    #[arg(long, allow_hyphen_values = true)]
    seller_id: Option<i64>,
    /// How many (default: the number of bundles).
    #[arg(long, allow_hyphen_values = true)]
    amount: Option<i64>,
    /// What it costs.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    sum: f64,
    /// Who pays (at most 255 characters).
    #[arg(long, default_value = "")]
    payer: String,
    /// Who receives it (at most 255 characters).
    #[arg(long, default_value = "")]
    recipient: String,
    /// How to reach the recipient (at most 255 characters).
    #[arg(long, default_value = "")]
    contacts: String,
    /// Where it goes (at most 255 characters).
    #[arg(long, default_value = "")]
    place: String,
    /// A comment (at most 1024 characters).
    #[arg(long, default_value = "")]
    comment: String,
    /// Its devices as a JSON array (at most 1000) of
    /// `{"equip_id":N,"equip_vendor":"..","equip_name":"..","equip_model":"..","model_code":"..","imei":"..","iccid":".."}`,
    /// every member optional.
    #[arg(long)]
    bundles: Option<String>,
}

pub(super) async fn email_gateway(
    store: &platform::Store,
    command: EmailGatewayCommand,
) -> platform::Result<Value> {
    Ok(match command {
        EmailGatewayCommand::Create(args) => {
            let GatewayArgs {
                dealer_id,
                label,
                provider,
                leasable,
                from_address,
                host,
                port,
                ssl_port,
                user,
                password,
                auth,
                starttls,
                starttls_required,
                use_ssl,
                trust_all_hosts,
                debug,
                timeout_ms,
                connection_timeout_ms,
                protocol,
            } = *args;
            let params = SmtpParams {
                default_from_address: from_address,
                user,
                password,
                host,
                port,
                ssl_port,
                trust_all_hosts,
                auth,
                debug,
                starttls_enable: starttls,
                starttls_required,
                use_ssl,
                timeout_ms,
                connection_timeout_ms,
                protocol,
            };
            json!(
                store
                    .create_email_gateway(NewEmailGateway {
                        dealer: dealer_id.map(DealerId),
                        label,
                        provider,
                        leasable,
                        params,
                    })
                    .await?
            )
        }
        EmailGatewayCommand::List { dealer_id } => {
            json!(store.email_gateways(DealerId(dealer_id)).await?)
        }
        EmailGatewayCommand::Bind {
            dealer_id,
            gateway_id,
        } => {
            store
                .bind_email_gateway(DealerId(dealer_id), Some(gateway_id))
                .await?;
            json!({"dealer_id": dealer_id, "bound_gateway": gateway_id})
        }
        EmailGatewayCommand::Unbind { dealer_id } => {
            store.bind_email_gateway(DealerId(dealer_id), None).await?;
            json!({"dealer_id": dealer_id, "bound_gateway": null})
        }
    })
}

pub(super) async fn order(
    store: &platform::Store,
    command: OrderCommand,
) -> platform::Result<Value> {
    Ok(match command {
        OrderCommand::Create(args) => {
            let OrderArgs {
                dealer_id,
                user_id,
                order_type,
                status,
                seller_id,
                amount,
                sum,
                payer,
                recipient,
                contacts,
                place,
                comment,
                bundles,
            } = *args;
            let bundles = match bundles {
                None => Vec::new(),
                Some(text) => parse_bundles(&text)?,
            };
            json!(
                store
                    .create_order(NewOrder {
                        dealer: DealerId(dealer_id),
                        user_id: UserId(user_id),
                        seller_id,
                        order_type: OrderType::parse("type", &order_type)?,
                        status: OrderStatus::parse("status", &status)?,
                        amount,
                        sum,
                        payer,
                        recipient,
                        contacts,
                        place,
                        comment,
                        bundles,
                    })
                    .await?
            )
        }
        OrderCommand::List { dealer_id } => {
            json!({"orders": store.orders(DealerId(dealer_id)).await?})
        }
    })
}

/// `--bundles`: a JSON array of bundle objects, unknown members refused.
fn parse_bundles(text: &str) -> platform::Result<Vec<NewBundle>> {
    let invalid = |reason: String| platform::Error::InvalidArgument {
        field: "bundles".into(),
        reason,
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("must be a JSON array of bundle objects: {e}")))?;
    let Some(items) = value.as_array() else {
        return Err(invalid("must be a JSON array of bundle objects".into()));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if !item.is_object() {
                return Err(invalid(format!("[{i}] must be an object")));
            }
            NewBundle::deserialize(item).map_err(|e| invalid(format!("[{i}]: {e}")))
        })
        .collect()
}
