//! `/v2/panel/gateways/email/list` (spec document 2, clarification 53): a
//! dealer's own gateways with their parameters, the gateways its parent
//! (the platform operator for a dealer without one) offers for lease
//! without theirs, the bound one or null; the three request forms; the
//! permission (13); isolation between parent, sub-dealer, sibling and
//! stranger, in the list and in binding.

use platform::{BlockStatus, NewEmailGateway, Permission, SmtpParams};
use schemas::DealerId;
use serde_json::{Value, json};

use crate::TestServer;

const LIST: &str = "/v2/panel/gateways/email/list";

fn params(from: &str) -> SmtpParams {
    SmtpParams {
        default_from_address: from.into(),
        user: Some("mailer".into()),
        password: Some("smtp-pass".into()),
        host: "smtp.example.com".into(),
        port: 587,
        ssl_port: 465,
        trust_all_hosts: false,
        auth: true,
        debug: false,
        starttls_enable: true,
        starttls_required: false,
        use_ssl: false,
        timeout_ms: 10_000,
        connection_timeout_ms: 5_000,
        protocol: "smtp".into(),
    }
}

/// A gateway of `dealer` (the operator's when `None`): its id.
async fn gateway(srv: &TestServer, dealer: Option<DealerId>, label: &str, leasable: bool) -> i64 {
    let provider = if dealer.is_some() { "smtp" } else { "sendgrid" };
    srv.store
        .create_email_gateway(NewEmailGateway {
            dealer,
            label: label.into(),
            provider: provider.into(),
            leasable,
            params: params(&format!(
                "{}@mail.example",
                label.to_lowercase().replace(' ', "-")
            )),
        })
        .await
        .unwrap()
        .id
}

/// A dealer with every permission and its panel session.
async fn dealer(srv: &TestServer) -> (DealerId, String) {
    let (dealer, password) = srv.dealer(None).await;
    (dealer, srv.panel_session(dealer, &password).await)
}

/// A sub-dealer of the dealer of `hash`, unblocked, and its panel session.
async fn sub_dealer(srv: &TestServer, hash: &str, title: &str) -> (DealerId, String) {
    let made = srv
        .post(
            "/v2/panel/subpaas/create",
            json!({"hash": hash, "password": "sub-pass-1", "title": title, "email": "sub@example.com",
                   "jur_name": "Sub LLP", "jur_country": "KZ", "link_monitoring": "sub.example.com"}),
        )
        .await;
    let id = DealerId(made.ok()["id"].as_i64().unwrap());
    srv.store
        .set_dealer_block_status(id, BlockStatus::NotBlocked)
        .await
        .unwrap();
    (id, srv.panel_session(id, "sub-pass-1").await)
}

async fn list(srv: &TestServer, hash: &str) -> Value {
    srv.post(LIST, json!({"hash": hash})).await.ok().clone()
}

fn ids(list: &Value, member: &str) -> Vec<i64> {
    list[member]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_dealer_lists_its_own_gateways_whole_and_those_offered_to_it_without_parameters() {
    let srv = TestServer::start().await;
    let (parent, hash) = dealer(&srv).await;
    let fresh = list(&srv, &hash).await;
    assert_eq!(
        fresh,
        json!({"success": true, "bound_gateway": null, "own": [], "leasable": []})
    );
    let offered = gateway(&srv, Some(parent), "Offered", true).await;
    let private = gateway(&srv, Some(parent), "Private", false).await;
    let operators = gateway(&srv, None, "Operator", true).await;
    gateway(&srv, None, "Operator private", false).await;

    let body = list(&srv, &hash).await;
    assert_eq!(body["bound_gateway"], Value::Null);
    assert_eq!(
        body["own"][0],
        json!({"id": offered, "leasable": true, "label": "Offered", "provider": "smtp", "params": {
            "default_from_address": "offered@mail.example",
            "mail.smtp.user": "mailer",
            "mail.smtp.password": "smtp-pass",
            "mail.smtp.host": "smtp.example.com",
            "mail.smtp.port": 587,
            "mail.smtp.ssl.port": 465,
            "mail.smtp.ssl.trust_all_hosts": false,
            "mail.smtp.auth": true,
            "mail.debug": false,
            "mail.smtp.starttls.enable": true,
            "mail.smtp.starttls.required": false,
            "mail.smtp.use_ssl": false,
            "mail.smtp.timeout": 10000,
            "mail.smtp.connectiontimeout": 5000,
            "mail.transport.protocol": "smtp"
        }})
    );
    assert_eq!(ids(&body, "own"), [offered, private]);
    assert_eq!(body["own"][1]["leasable"], false);
    // A dealer without a parent is offered the operator's leasable gateways.
    assert_eq!(
        body["leasable"],
        json!([{"id": operators, "label": "Operator", "default_from_address": "operator@mail.example",
                "provider": "sendgrid"}])
    );

    // Bound: its own, or one it is offered.
    srv.store
        .bind_email_gateway(parent, Some(operators))
        .await
        .unwrap();
    assert_eq!(list(&srv, &hash).await["bound_gateway"], operators);
    srv.store
        .bind_email_gateway(parent, Some(private))
        .await
        .unwrap();
    assert_eq!(list(&srv, &hash).await["bound_gateway"], private);
    srv.store.bind_email_gateway(parent, None).await.unwrap();
    assert_eq!(list(&srv, &hash).await["bound_gateway"], Value::Null);

    // The same answer through GET and a form.
    let posted = list(&srv, &hash).await;
    let got = srv.get(LIST, &[("hash", hash.as_str())]).await;
    assert_eq!(got.ok(), &posted);
    let form = srv.post_form(LIST, &[("hash", hash.as_str())]).await;
    assert_eq!(form.ok(), &posted);
}

#[tokio::test]
async fn parent_sub_dealer_sibling_and_stranger_never_see_each_others_gateways() {
    let srv = TestServer::start().await;
    let (parent, parent_hash) = dealer(&srv).await;
    let (sub, sub_hash) = sub_dealer(&srv, &parent_hash, "Sub").await;
    let (sibling, sibling_hash) = sub_dealer(&srv, &parent_hash, "Sibling").await;
    let (grandchild, grandchild_hash) = sub_dealer(&srv, &sub_hash, "Grandchild").await;
    let (stranger, stranger_hash) = dealer(&srv).await;

    let parents_offer = gateway(&srv, Some(parent), "Parent offer", true).await;
    let parents_own = gateway(&srv, Some(parent), "Parent own", false).await;
    let subs_offer = gateway(&srv, Some(sub), "Sub offer", true).await;
    let siblings_own = gateway(&srv, Some(sibling), "Sibling own", false).await;
    let strangers_offer = gateway(&srv, Some(stranger), "Stranger offer", true).await;
    let operators = gateway(&srv, None, "Operator", true).await;

    let parent_list = list(&srv, &parent_hash).await;
    assert_eq!(
        (ids(&parent_list, "own"), ids(&parent_list, "leasable")),
        (vec![parents_offer, parents_own], vec![operators])
    );
    // The sub-dealer is offered its parent's leasable gateway, without its
    // parameters, and never the operator's (its parent is its operator).
    let sub_list = list(&srv, &sub_hash).await;
    assert_eq!(
        (ids(&sub_list, "own"), ids(&sub_list, "leasable")),
        (vec![subs_offer], vec![parents_offer])
    );
    assert_eq!(
        sub_list["leasable"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["id", "label", "default_from_address", "provider"]
    );
    assert!(!sub_list["leasable"].to_string().contains("smtp-pass"));
    let sibling_list = list(&srv, &sibling_hash).await;
    assert_eq!(
        (ids(&sibling_list, "own"), ids(&sibling_list, "leasable")),
        (vec![siblings_own], vec![parents_offer])
    );
    // A grandchild is offered its own parent's, not its grandparent's.
    let grandchild_list = list(&srv, &grandchild_hash).await;
    assert_eq!(
        (
            ids(&grandchild_list, "own"),
            ids(&grandchild_list, "leasable")
        ),
        (vec![], vec![subs_offer])
    );
    let stranger_list = list(&srv, &stranger_hash).await;
    assert_eq!(
        (ids(&stranger_list, "own"), ids(&stranger_list, "leasable")),
        (vec![strangers_offer], vec![operators])
    );

    // Binding takes only what the list shows: anything else is 201.
    for (dealer, gateway) in [
        (sub, parents_own),
        (sub, operators),
        (sub, siblings_own),
        (parent, subs_offer),
        (parent, strangers_offer),
        (grandchild, parents_offer),
        (stranger, parents_offer),
        (parent, 999_999),
    ] {
        let err = srv
            .store
            .bind_email_gateway(dealer, Some(gateway))
            .await
            .unwrap_err();
        assert_eq!(
            schemas::HasCode::code(&err).number(),
            201,
            "{dealer} binding {gateway}: {err}"
        );
    }
    srv.store
        .bind_email_gateway(sub, Some(parents_offer))
        .await
        .unwrap();
    assert_eq!(list(&srv, &sub_hash).await["bound_gateway"], parents_offer);
    assert_eq!(
        list(&srv, &parent_hash).await["bound_gateway"],
        Value::Null,
        "a sub-dealer's binding is its own"
    );
}

#[tokio::test]
async fn the_list_needs_email_gateways_read_and_a_live_panel_session() {
    let srv = TestServer::start().await;
    let (without, password) = srv
        .dealer(Some(vec![
            Permission::EmailGatewaysCreate,
            Permission::EmailGatewaysUpdate,
            Permission::TrackerBundlesRead,
        ]))
        .await;
    gateway(&srv, Some(without), "Hidden", false).await;
    let hash = srv.panel_session(without, &password).await;
    let description = srv
        .post(LIST, json!({"hash": hash}))
        .await
        .error(13, 403)
        .to_owned();
    assert!(
        description.contains("email_gateways: read"),
        "{description}"
    );
    srv.get(LIST, &[("hash", hash.as_str())])
        .await
        .error(13, 403);

    let (with, password) = srv.dealer(Some(vec![Permission::EmailGatewaysRead])).await;
    let hash = srv.panel_session(with, &password).await;
    srv.post(LIST, json!({"hash": hash})).await.ok();
    srv.post(LIST, json!({})).await.error(3, 400);
    srv.post(LIST, json!({"hash": "0".repeat(32)}))
        .await
        .error(4, 400);
    srv.store
        .set_dealer_block_status(with, BlockStatus::BlockLogin)
        .await
        .unwrap();
    srv.post(LIST, json!({"hash": hash})).await.error(11, 403);
}
