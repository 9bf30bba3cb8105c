//! `/v2/panel/order/read` (spec document 2, clarification 53): an order
//! with its bundles as stored, in the three request forms; 201 for an
//! unknown order and for another dealer's (parent, sub-dealer, stranger);
//! the permission (13); what the operator's `create_order` refuses.

use platform::{BlockStatus, NewBundle, NewOrder, OrderStatus, OrderType, Permission};
use schemas::{DealerId, HasCode, UserId};
use serde_json::json;

use crate::TestServer;

const READ: &str = "/v2/panel/order/read";

fn new_order(dealer: DealerId, user: UserId) -> NewOrder {
    NewOrder {
        dealer,
        user_id: user,
        seller_id: None,
        order_type: OrderType::Equip,
        status: OrderStatus::Created,
        amount: None,
        sum: 249.5,
        payer: " Acme LLP ".into(),
        recipient: "Dana Ospanova".into(),
        contacts: "+7 701 000 0000".into(),
        place: "Almaty, Abay Ave 52".into(),
        comment: "Two trackers".into(),
        bundles: vec![
            NewBundle {
                equip_id: 17,
                equip_vendor: "Teltonika".into(),
                equip_name: "FMB920".into(),
                equip_model: "FMB920".into(),
                model_code: "fmb920".into(),
                imei: "356307042441013".into(),
                iccid: "8970101234567890123".into(),
            },
            NewBundle {
                equip_id: 18,
                imei: "356307042441014".into(),
                ..NewBundle::default()
            },
        ],
    }
}

/// An order of `dealer` for a new master user `login`: its id.
async fn order(srv: &TestServer, dealer: DealerId, login: &str) -> i64 {
    let user = srv.user(dealer, login).await;
    srv.store
        .create_order(new_order(dealer, user))
        .await
        .unwrap()
        .id
}

async fn read(srv: &TestServer, hash: &str, id: i64) -> crate::Answer {
    srv.post(READ, json!({"hash": hash, "order_id": id})).await
}

#[tokio::test]
async fn an_order_reads_back_with_its_bundles_in_every_request_form() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(None).await;
    let hash = srv.panel_session(dealer, &password).await;
    let user = srv.user(dealer, "buyer@example.com").await;
    let made = srv
        .store
        .create_order(new_order(dealer, user))
        .await
        .unwrap();
    let id = made.id;
    let first = made.bundles[0].id;
    let body = read(&srv, &hash, id).await.ok().clone();
    assert_eq!(
        body,
        json!({"success": true, "value": {
            "id": id, "user_id": user.0, "seller_id": dealer.0, "amount": 2, "sum": 249.5,
            "type": "equip", "payer": "Acme LLP", "recipient": "Dana Ospanova",
            "contacts": "+7 701 000 0000", "place": "Almaty, Abay Ave 52", "comment": "Two trackers",
            "creation_time": "2024-06-01 08:00:00", "status": "created",
            "bundles": [
                {"id": first, "equip_id": 17, "order_id": id, "equip_vendor": "Teltonika",
                 "equip_name": "FMB920", "equip_model": "FMB920", "model_code": "fmb920",
                 "imei": "356307042441013", "iccid": "8970101234567890123",
                 "assign_time": "2024-06-01 08:00:00"},
                {"id": first + 1, "equip_id": 18, "order_id": id, "equip_vendor": "",
                 "equip_name": "", "equip_model": "", "model_code": "",
                 "imei": "356307042441014", "iccid": "", "assign_time": "2024-06-01 08:00:00"}
            ]
        }})
    );
    let id_text = id.to_string();
    let got = srv
        .get(
            READ,
            &[("hash", hash.as_str()), ("order_id", id_text.as_str())],
        )
        .await;
    assert_eq!(got.ok(), &body);
    let form = srv
        .post_form(
            READ,
            &[("hash", hash.as_str()), ("order_id", id_text.as_str())],
        )
        .await;
    assert_eq!(form.ok(), &body);
    // The same object the operator's list answers.
    let listed = srv.store.orders(dealer).await.unwrap();
    assert_eq!(
        serde_json::to_value(&listed).unwrap(),
        json!([body["value"]])
    );

    // Every status and type of clarification 53 reads back as written.
    for (status, order_type) in OrderStatus::ALL.iter().zip(OrderType::ALL.iter().cycle()) {
        let order = srv
            .store
            .create_order(NewOrder {
                status: *status,
                order_type: *order_type,
                amount: Some(5),
                seller_id: Some(0),
                bundles: Vec::new(),
                ..new_order(dealer, user)
            })
            .await
            .unwrap();
        let value = read(&srv, &hash, order.id).await.ok()["value"].clone();
        assert_eq!(
            (
                &value["status"],
                &value["type"],
                &value["amount"],
                &value["seller_id"]
            ),
            (
                &json!(status.as_str()),
                &json!(order_type.as_str()),
                &json!(5),
                &json!(0)
            )
        );
        assert_eq!(value["bundles"], json!([]));
    }
}

#[tokio::test]
async fn an_unknown_order_and_every_other_dealers_is_201() {
    let srv = TestServer::start().await;
    let (parent, password) = srv.dealer(None).await;
    let parent_hash = srv.panel_session(parent, &password).await;
    let made = srv
        .post(
            "/v2/panel/subpaas/create",
            json!({"hash": parent_hash, "password": "sub-pass-1", "title": "Sub", "email": "sub@example.com",
                   "jur_name": "Sub LLP", "jur_country": "KZ", "link_monitoring": "sub.example.com"}),
        )
        .await;
    let sub = DealerId(made.ok()["id"].as_i64().unwrap());
    srv.store
        .set_dealer_block_status(sub, BlockStatus::NotBlocked)
        .await
        .unwrap();
    let sub_hash = srv.panel_session(sub, "sub-pass-1").await;
    let (stranger, password) = srv.dealer(None).await;
    let stranger_hash = srv.panel_session(stranger, &password).await;

    let parents = order(&srv, parent, "p@example.com").await;
    let subs = order(&srv, sub, "s@example.com").await;
    let strangers = order(&srv, stranger, "x@example.com").await;
    for (hash, own, others) in [
        (&parent_hash, parents, [subs, strangers]),
        (&sub_hash, subs, [parents, strangers]),
        (&stranger_hash, strangers, [parents, subs]),
    ] {
        assert_eq!(read(&srv, hash, own).await.ok()["value"]["id"], own);
        for other in others.into_iter().chain([999_999, 0, -1]) {
            let description = read(&srv, hash, other).await.error(201, 400).to_owned();
            assert!(description.contains("order"), "{description}");
        }
    }
    for params in [
        json!({"hash": parent_hash}),
        json!({"hash": parent_hash, "order_id": "first"}),
        json!({"hash": parent_hash, "order_id": 1.5}),
    ] {
        let description = srv.post(READ, params).await.error(7, 400).to_owned();
        assert!(description.contains("order_id"), "{description}");
    }
}

#[tokio::test]
async fn read_needs_tracker_bundles_read() {
    let srv = TestServer::start().await;
    let (without, password) = srv
        .dealer(Some(vec![
            Permission::EmailGatewaysRead,
            Permission::TrackersRead,
        ]))
        .await;
    let id = order(&srv, without, "no-right@example.com").await;
    let hash = srv.panel_session(without, &password).await;
    let description = read(&srv, &hash, id).await.error(13, 403).to_owned();
    assert!(
        description.contains("tracker_bundles: read"),
        "{description}"
    );
    // 13 comes before the parameters are looked at.
    srv.post(READ, json!({"hash": hash})).await.error(13, 403);

    let (with, password) = srv.dealer(Some(vec![Permission::TrackerBundlesRead])).await;
    let id = order(&srv, with, "right@example.com").await;
    let hash = srv.panel_session(with, &password).await;
    read(&srv, &hash, id).await.ok();
    srv.post(READ, json!({"order_id": id})).await.error(3, 400);
    srv.post(READ, json!({"hash": "0".repeat(32), "order_id": id}))
        .await
        .error(4, 400);
}

#[tokio::test]
async fn the_operator_makes_orders_only_for_the_dealers_master_users_and_checks_them() {
    let srv = TestServer::start().await;
    let (dealer, _) = srv.dealer(None).await;
    let (other, _) = srv.dealer(None).await;
    let user = srv.user(dealer, "mine@example.com").await;
    let theirs = srv.user(other, "theirs@example.com").await;
    let code = |err: platform::Error| (err.code().number(), err.to_string());
    for (order, expected, names) in [
        (new_order(dealer, theirs), 201, "user"),
        (new_order(dealer, UserId(999_999)), 201, "user"),
        (new_order(DealerId(999_999), user), 201, "dealer"),
        (
            NewOrder {
                sum: -1.0,
                ..new_order(dealer, user)
            },
            7,
            "sum",
        ),
        (
            NewOrder {
                sum: f64::NAN,
                ..new_order(dealer, user)
            },
            7,
            "sum",
        ),
        (
            NewOrder {
                amount: Some(-1),
                ..new_order(dealer, user)
            },
            7,
            "amount",
        ),
        (
            NewOrder {
                comment: "c".repeat(1025),
                ..new_order(dealer, user)
            },
            7,
            "comment",
        ),
        (
            NewOrder {
                payer: "tab\there".into(),
                ..new_order(dealer, user)
            },
            7,
            "payer",
        ),
        (
            NewOrder {
                bundles: vec![NewBundle {
                    imei: "1".repeat(33),
                    ..NewBundle::default()
                }],
                ..new_order(dealer, user)
            },
            7,
            "bundles[0].imei",
        ),
        (
            NewOrder {
                bundles: vec![NewBundle::default(); 1001],
                ..new_order(dealer, user)
            },
            7,
            "bundles",
        ),
    ] {
        let (number, description) = code(srv.store.create_order(order).await.unwrap_err());
        assert_eq!(number, expected, "{description}");
        assert!(description.contains(names), "{names}: {description}");
    }
    // A sub-user is not a master user: the order is not made either.
    let account_user = srv.user(dealer, "master@example.com").await;
    let sub = srv
        .store
        .create_subuser(platform::NewSubuser {
            master_id: account_user,
            login: "sub@example.com".into(),
            password: "sub-pass-1".into(),
            rights: Vec::new(),
            trackers: Vec::new(),
            first_name: String::new(),
            last_name: String::new(),
        })
        .await
        .unwrap();
    let (number, _) = code(
        srv.store
            .create_order(new_order(dealer, sub))
            .await
            .unwrap_err(),
    );
    assert_eq!(number, 201);
    assert!(srv.store.orders(dealer).await.unwrap().is_empty());
    assert_eq!(
        srv.store
            .orders(DealerId(999_999))
            .await
            .unwrap_err()
            .code()
            .number(),
        201
    );
}
