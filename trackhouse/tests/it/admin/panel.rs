//! `admin paas-tariff`, `dealer create|update --tariff`, `dealer delete`,
//! `email-gateway` and `order`: the dealer panel's records no call of the
//! spec makes, and their effect on a running server.

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{code, only_id};
use crate::serve::Api;
use crate::support::{Proc, admin, admin_async, admin_error, master_user};

/// Runs each refused command: (arguments, code, text the description names).
fn refused(dir: &std::path::Path, cases: &[(&[&str], i64, &str)]) {
    for (args, expected, names) in cases {
        let error = admin_error(dir, args);
        assert_eq!(code(&error), *expected, "admin {args:?}: {error}");
        let description = error["status"]["description"].as_str().unwrap_or_default();
        assert!(
            description.contains(names),
            "admin {args:?}: {description:?} should name {names:?}"
        );
    }
}

fn dealer(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "dealer",
        "create",
        "--title",
        "D",
        "--panel-password",
        "secret123",
    ];
    args.extend(extra);
    admin(dir, &args)
}

#[test]
fn paas_tariffs_are_made_and_dealers_put_on_them_and_deleted() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let tariff = only_id(
        &admin(
            dir,
            &[
                "paas-tariff",
                "create",
                "--name",
                "Resale",
                "--currency",
                "EUR",
                "--license-price",
                "2.5",
                "--trial",
                "--store-period",
                "6m",
                "--no-subpaas",
                "--service-prices",
                r#"{"incoming_sms":0.01,"traffic":0.005}"#,
            ],
        ),
        "paas_tariff_id",
    );
    assert!(tariff > 1, "1 is PaaS Standard");
    let tariff_arg = tariff.to_string();
    let on_it = dealer(dir, &["--tariff", &tariff_arg]);
    let on_it_id = on_it["dealer_id"].as_i64().unwrap();
    assert_eq!(on_it, json!({"dealer_id": on_it_id, "tariff_id": tariff}));
    let plain = only_id(&dealer(dir, &[]), "dealer_id").to_string();
    assert_eq!(
        admin(
            dir,
            &[
                "dealer",
                "update",
                "--dealer-id",
                &plain,
                "--tariff",
                &tariff_arg
            ]
        ),
        json!({"dealer_id": plain.parse::<i64>().unwrap(), "tariff_id": tariff})
    );
    assert_eq!(
        admin(
            dir,
            &["dealer", "update", "--dealer-id", &plain, "--tariff", "1"]
        ),
        json!({"dealer_id": plain.parse::<i64>().unwrap(), "tariff_id": 1})
    );
    assert_eq!(
        admin(dir, &["dealer", "delete", "--dealer-id", &plain]),
        json!({"dealer_id": plain.parse::<i64>().unwrap(), "deleted": true})
    );
    refused(
        dir,
        &[
            (
                &["paas-tariff", "create", "--name", "Resale"],
                244,
                "Resale",
            ),
            (
                &["paas-tariff", "create", "--name", "X", "--currency", "euro"],
                7,
                "currency",
            ),
            (
                &[
                    "paas-tariff",
                    "create",
                    "--name",
                    "X",
                    "--store-period",
                    "6w",
                ],
                7,
                "store_period",
            ),
            (
                &[
                    "paas-tariff",
                    "create",
                    "--name",
                    "X",
                    "--service-prices",
                    "[1]",
                ],
                7,
                "service_prices",
            ),
            (
                &[
                    "paas-tariff",
                    "create",
                    "--name",
                    "X",
                    "--service-prices",
                    r#"{"traffic": -0.5}"#,
                ],
                7,
                "service_prices.traffic",
            ),
            (
                &[
                    "paas-tariff",
                    "create",
                    "--name",
                    "X",
                    "--license-price",
                    "-1",
                ],
                7,
                "license_price",
            ),
            (
                &["dealer", "update", "--dealer-id", &plain, "--tariff", "999"],
                201,
                "999",
            ),
            (
                &["dealer", "update", "--dealer-id", "999", "--tariff", "1"],
                201,
                "999",
            ),
            (&["dealer", "delete", "--dealer-id", "999"], 201, "999"),
            (
                &[
                    "dealer",
                    "create",
                    "--title",
                    "T",
                    "--panel-password",
                    "secret123",
                    "--tariff",
                    "999",
                ],
                201,
                "999",
            ),
        ],
    );
}

#[test]
fn email_gateways_are_made_listed_and_bound() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let dealer_id = only_id(&dealer(dir, &[]), "dealer_id");
    let other = only_id(&dealer(dir, &[]), "dealer_id").to_string();
    let id = dealer_id.to_string();
    let own = admin(
        dir,
        &[
            "email-gateway",
            "create",
            "--dealer-id",
            &id,
            "--label",
            " Office ",
            "--from-address",
            "Fleet@Acme.Example",
            "--host",
            "SMTP.acme.example",
            "--user",
            "mailer",
            "--password",
            "pw 1",
            "--auth",
            "--starttls",
            "--leasable",
        ],
    );
    let own_id = own["id"].as_i64().unwrap();
    assert_eq!(
        own,
        json!({"id": own_id, "leasable": true, "label": "Office", "provider": "smtp", "params": {
            "default_from_address": "fleet@acme.example",
            "mail.smtp.user": "mailer",
            "mail.smtp.password": "pw 1",
            "mail.smtp.host": "smtp.acme.example",
            "mail.smtp.port": 587,
            "mail.smtp.ssl.port": 465,
            "mail.smtp.ssl.trust_all_hosts": false,
            "mail.smtp.auth": true,
            "mail.debug": false,
            "mail.smtp.starttls.enable": true,
            "mail.smtp.starttls.required": false,
            "mail.smtp.use_ssl": false,
            "mail.smtp.timeout": 10000,
            "mail.smtp.connectiontimeout": 10000,
            "mail.transport.protocol": "smtp"
        }})
    );
    let operators = admin(
        dir,
        &[
            "email-gateway",
            "create",
            "--label",
            "Platform",
            "--provider",
            "mailgun",
            "--leasable",
            "--from-address",
            "noreply@platform.example",
            "--host",
            "192.0.2.25",
            "--port",
            "2525",
        ],
    )["id"]
        .as_i64()
        .unwrap();
    let theirs = admin(
        dir,
        &[
            "email-gateway",
            "create",
            "--dealer-id",
            &other,
            "--label",
            "Theirs",
            "--from-address",
            "a@b.example",
            "--host",
            "mx.b.example",
        ],
    )["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let listed = admin(dir, &["email-gateway", "list", "--dealer-id", &id]);
    assert_eq!(listed["bound_gateway"], Value::Null);
    assert_eq!(listed["own"], json!([own]));
    assert_eq!(
        listed["leasable"],
        json!([{"id": operators, "label": "Platform", "default_from_address": "noreply@platform.example",
                "provider": "mailgun"}])
    );
    let operators_arg = operators.to_string();
    assert_eq!(
        admin(
            dir,
            &[
                "email-gateway",
                "bind",
                "--dealer-id",
                &id,
                "--gateway-id",
                &operators_arg
            ]
        ),
        json!({"dealer_id": dealer_id, "bound_gateway": operators})
    );
    assert_eq!(
        admin(dir, &["email-gateway", "list", "--dealer-id", &id])["bound_gateway"],
        operators
    );
    assert_eq!(
        admin(dir, &["email-gateway", "unbind", "--dealer-id", &id]),
        json!({"dealer_id": dealer_id, "bound_gateway": null})
    );
    // A label, a sender and a host, each replaced when `extra` names it.
    let create = |extra: &'static [&'static str]| -> Vec<&'static str> {
        let mut args = vec!["email-gateway", "create"];
        for (flag, default) in [
            ("--label", "G"),
            ("--from-address", "g@example.com"),
            ("--host", "smtp.example.com"),
        ] {
            if !extra.contains(&flag) {
                args.extend([flag, default]);
            }
        }
        args.extend(extra);
        args
    };
    let cases: Vec<(Vec<&str>, i64, &str)> = vec![
        (
            create(&["--dealer-id", "1", "--provider", "mailgun"]),
            7,
            "provider",
        ),
        (create(&["--provider", "mail gun"]), 7, "provider"),
        (create(&["--host", "bad host"]), 7, "mail.smtp.host"),
        (create(&["--port", "0"]), 7, "mail.smtp.port"),
        (create(&["--timeout-ms", "600001"]), 7, "mail.smtp.timeout"),
        (create(&["--auth"]), 7, "mail.smtp.user"),
        (
            create(&["--starttls-required"]),
            7,
            "mail.smtp.starttls.enable",
        ),
        (
            create(&["--protocol", "imap"]),
            7,
            "mail.transport.protocol",
        ),
        (
            create(&["--from-address", "nobody"]),
            7,
            "default_from_address",
        ),
        (create(&["--label", " "]), 7, "label"),
        (create(&["--dealer-id", "999"]), 201, "999"),
        (
            vec![
                "email-gateway",
                "bind",
                "--dealer-id",
                &id,
                "--gateway-id",
                &theirs,
            ],
            201,
            "gateway",
        ),
        (
            vec!["email-gateway", "list", "--dealer-id", "999"],
            201,
            "999",
        ),
    ];
    let cases: Vec<(&[&str], i64, &str)> = cases
        .iter()
        .map(|(args, code, names)| (args.as_slice(), *code, *names))
        .collect();
    refused(dir, &cases);
}

#[test]
fn orders_are_made_for_a_dealers_master_user_and_listed() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer_id, user) = master_user(dir, "buyer@example.com");
    let (_, stranger) = master_user(dir, "stranger@example.com");
    let (id, user_arg) = (dealer_id.to_string(), user.to_string());
    let order = admin(
        dir,
        &[
            "order",
            "create",
            "--dealer-id",
            &id,
            "--user-id",
            &user_arg,
            "--type",
            "equip",
            "--sum",
            "99.9",
            "--recipient",
            "Dana",
            "--bundles",
            r#"[{"equip_id": 3, "equip_vendor": "Teltonika", "imei": "356307042441013"}, {"iccid": "8970101234567890123"}]"#,
        ],
    );
    let order_id = order["id"].as_i64().unwrap();
    let created = order["creation_time"].as_str().unwrap().to_owned();
    assert_eq!(created.len(), 19, "YYYY-MM-DD HH:MM:SS: {created}");
    let bundle = order["bundles"][0]["id"].as_i64().unwrap();
    assert_eq!(
        order,
        json!({"id": order_id, "user_id": user, "seller_id": dealer_id, "amount": 2, "sum": 99.9,
               "type": "equip", "payer": "", "recipient": "Dana", "contacts": "", "place": "",
               "comment": "", "creation_time": created, "status": "created", "bundles": [
                 {"id": bundle, "equip_id": 3, "order_id": order_id, "equip_vendor": "Teltonika",
                  "equip_name": "", "equip_model": "", "model_code": "", "imei": "356307042441013",
                  "iccid": "", "assign_time": created},
                 {"id": bundle + 1, "equip_id": 0, "order_id": order_id, "equip_vendor": "",
                  "equip_name": "", "equip_model": "", "model_code": "", "imei": "",
                  "iccid": "8970101234567890123", "assign_time": created}]})
    );
    let settled = admin(
        dir,
        &[
            "order",
            "create",
            "--dealer-id",
            &id,
            "--user-id",
            &user_arg,
            "--type",
            "bank_license_camera",
            "--status",
            "shipped_partially",
            "--amount",
            "4",
            "--seller-id",
            "0",
        ],
    );
    assert_eq!(
        (
            &settled["type"],
            &settled["status"],
            &settled["amount"],
            &settled["seller_id"],
            &settled["bundles"]
        ),
        (
            &json!("bank_license_camera"),
            &json!("shipped_partially"),
            &json!(4),
            &json!(0),
            &json!([])
        )
    );
    assert_eq!(
        admin(dir, &["order", "list", "--dealer-id", &id]),
        json!({"orders": [order, settled]})
    );
    let stranger = stranger.to_string();
    let cases: Vec<(Vec<&str>, i64, &str)> = vec![
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &user_arg,
                "--type",
                "gift",
            ],
            7,
            "type",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &user_arg,
                "--type",
                "bank",
                "--status",
                "lost",
            ],
            7,
            "status",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &user_arg,
                "--type",
                "bank",
                "--bundles",
                "{}",
            ],
            7,
            "bundles",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &user_arg,
                "--type",
                "bank",
                "--bundles",
                r#"[{"serial": "1"}]"#,
            ],
            7,
            "serial",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &user_arg,
                "--type",
                "bank",
                "--sum",
                "-5",
            ],
            7,
            "sum",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                &id,
                "--user-id",
                &stranger,
                "--type",
                "bank",
            ],
            201,
            "user",
        ),
        (
            vec![
                "order",
                "create",
                "--dealer-id",
                "999",
                "--user-id",
                &user_arg,
                "--type",
                "bank",
            ],
            201,
            "dealer",
        ),
        (vec!["order", "list", "--dealer-id", "999"], 201, "999"),
    ];
    let cases: Vec<(&[&str], i64, &str)> = cases
        .iter()
        .map(|(args, code, names)| (args.as_slice(), *code, *names))
        .collect();
    refused(dir, &cases);
}

#[tokio::test]
async fn tariff_gateways_orders_and_deletion_take_effect_while_serve_runs() {
    let dir = TempDir::new().unwrap();
    let dir = dir.path();
    let (dealer_id, user) = master_user(dir, "serve-panel@example.com");
    let id = dealer_id.to_string();
    let (_server, addr) = Proc::serve(dir);
    let api = Api::new(addr);
    let hash = api
        .ok(
            "/v2/panel/account/auth",
            json!({"login": id, "password": "secret123"}),
        )
        .await["hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let info = api
        .ok("/v2/panel/dealer/get_info", json!({"hash": hash}))
        .await;
    assert_eq!(
        (&info["tariff_id"], &info["tariff"]["name"]),
        (&json!(1), &json!("PaaS Standard"))
    );

    // A new PaaS plan, then the dealer on it: the next call answers it.
    let tariff = admin_async(
        dir,
        &[
            "paas-tariff",
            "create",
            "--name",
            "Trial",
            "--currency",
            "EUR",
            "--trial",
            "--store-period",
            "3m",
        ],
    )
    .await["paas_tariff_id"]
        .as_i64()
        .unwrap();
    admin_async(
        dir,
        &[
            "dealer",
            "update",
            "--dealer-id",
            &id,
            "--tariff",
            &tariff.to_string(),
        ],
    )
    .await;
    let info = api
        .ok("/v2/panel/dealer/get_info", json!({"hash": hash}))
        .await;
    assert_eq!(
        (
            &info["tariff_id"],
            &info["tariff"]["name"],
            &info["demo_tariff"],
            &info["seller_currency"],
            &info["tariff"]["store_period"]
        ),
        (
            &json!(tariff),
            &json!("Trial"),
            &json!(true),
            &json!("EUR"),
            &json!("P3M")
        )
    );

    // A gateway made and bound, an order made: the panel reads them at once.
    let gateways = "/v2/panel/gateways/email/list";
    assert_eq!(
        api.ok(gateways, json!({"hash": hash})).await["bound_gateway"],
        Value::Null
    );
    let gateway = admin_async(
        dir,
        &[
            "email-gateway",
            "create",
            "--dealer-id",
            &id,
            "--label",
            "Office",
            "--from-address",
            "fleet@acme.example",
            "--host",
            "smtp.acme.example",
        ],
    )
    .await["id"]
        .as_i64()
        .unwrap();
    admin_async(
        dir,
        &[
            "email-gateway",
            "bind",
            "--dealer-id",
            &id,
            "--gateway-id",
            &gateway.to_string(),
        ],
    )
    .await;
    let listed = api.ok(gateways, json!({"hash": hash})).await;
    assert_eq!(
        (&listed["bound_gateway"], &listed["own"][0]["id"]),
        (&json!(gateway), &json!(gateway))
    );
    let order = admin_async(
        dir,
        &[
            "order",
            "create",
            "--dealer-id",
            &id,
            "--user-id",
            &user.to_string(),
            "--type",
            "equip",
        ],
    )
    .await;
    let read = api
        .ok(
            "/v2/panel/order/read",
            json!({"hash": hash, "order_id": order["id"]}),
        )
        .await;
    assert_eq!(read["value"], order);

    // A deleted dealer's sessions end, and its login is refused.
    admin_async(dir, &["dealer", "delete", "--dealer-id", &id]).await;
    api.fails(gateways, json!({"hash": hash}), 400, 4).await;
    api.fails(
        "/v2/panel/account/auth",
        json!({"login": id, "password": "secret123"}),
        403,
        11,
    )
    .await;
}
