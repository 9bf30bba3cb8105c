//! `POST /v2/panel/user/upload` (spec document 2, clarification 49): users
//! from a `;` CSV or an XLSX built here, columns by header name in any
//! order, all or nothing: a bad row (named), a login twice (273), a login
//! registered (206), no data rows (274), a bad header; `users: create`.

use platform::Permission;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::{Account, Answer, TestServer};

const HEADER: &str = "Email address*;Password*;Status*;Legal status*;Surname*;Name*;Middle name;Phone number;Comment;Country;Region;City;Street, address;Zip code;Legal name;Tax number;IEC;Registration country;Registration region;Registration city;Registration address;Registration zip code;Discount;End date of discount;Device limit";

fn csv_row(login: &str, legal_status: &str) -> String {
    format!(
        "{login};secret-1;1;{legal_status};Seitkali;Dana;;77011234567;from the file;Kazakhstan;Almaty;Almaty;Abay Ave 52;050000;Fleet LLP;990140000385;77-01;Kazakhstan;Almaty;Almaty;Abay Ave 52;050000;7,5;2027-01-31;25"
    )
}

async fn upload(srv: &TestServer, hash: &str, name: &str, content: Vec<u8>) -> Answer {
    let form = Form::new().part("file", Part::bytes(content).file_name(name.to_owned()));
    srv.send(
        srv.client()
            .post(srv.url("/v2/panel/user/upload"))
            .header("Authorization", format!("NVX {hash}"))
            .multipart(form),
    )
    .await
}

async fn panel(srv: &TestServer, acc: &Account) -> String {
    srv.panel_session(acc.dealer, &acc.dealer_password).await
}

async fn logins(srv: &TestServer, hash: &str) -> Vec<String> {
    let answer = srv
        .post(
            "/v2/panel/user/list",
            json!({"hash": hash, "order_by": "login"}),
        )
        .await;
    answer.ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["login"].as_str().unwrap().to_owned())
        .collect()
}

fn rows(answer: &Answer) -> Vec<(u64, String)> {
    answer.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["row_number"].as_u64().unwrap(),
                e["parameter"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_csv_creates_every_row_with_the_dealers_zone() {
    let srv = TestServer::start().await;
    let acc = srv.account("upload@example.com").await;
    let hash = panel(&srv, &acc).await;
    let file = format!(
        "\u{feff}{HEADER}\n{}\n{}\n\n{}\n",
        csv_row("one@upload.example", "2"),
        csv_row("Two@Upload.Example", "3"),
        "three@upload.example;secret-3;0;1;Lee;Ann;;;;;;;;;;;;;;;;;;;"
    );
    let answer = upload(&srv, &hash, "users.csv", file.into_bytes()).await;
    assert_eq!(
        answer.ok(),
        &json!({"success": true, "total": 3, "errors": 0})
    );
    assert_eq!(
        logins(&srv, &hash).await,
        [
            "one@upload.example".to_owned(),
            "three@upload.example".into(),
            "two@upload.example".into(),
            acc.login.clone(),
        ]
    );
    let list = srv
        .post(
            "/v2/panel/user/list",
            json!({"hash": hash, "filter": "one@upload"}),
        )
        .await;
    let one = list.ok()["list"][0].clone();
    let read = srv
        .post(
            "/v2/panel/user/read",
            json!({"hash": hash, "user_id": one["id"]}),
        )
        .await;
    let value = &read.ok()["value"];
    assert_eq!(
        (
            &value["legal_type"],
            &value["legal_name"],
            &value["iec"],
            &value["post_street_address"],
            &value["comment"],
            &value["verified"]
        ),
        (
            &json!("legal_entity"),
            &json!("Fleet LLP"),
            &json!("77-01"),
            &json!("Abay Ave 52"),
            &json!("from the file"),
            &json!(true)
        )
    );
    assert_eq!(read.ok()["discount"]["value"], 7.5);
    assert_eq!(read.ok()["discount"]["end_date"], "2027-01-31 23:59:59");
    // A sole trader keeps its legal name, not an IEC; an inactive individual cannot log in.
    let two = srv
        .post(
            "/v2/panel/user/list",
            json!({"hash": hash, "filter": "two@upload"}),
        )
        .await;
    let two = &two.ok()["list"][0];
    assert_eq!(
        (&two["legal_type"], &two["legal_name"], &two["iec"]),
        (&json!("sole_trader"), &json!("Fleet LLP"), &Value::Null)
    );
    srv.login("one@upload.example", "secret-1").await;
    srv.post(
        "/v2/user/auth",
        json!({"login": "three@upload.example", "password": "secret-3"}),
    )
    .await
    .error(103, 400);
}

#[tokio::test]
async fn an_xlsx_with_columns_in_another_order_is_read() {
    let srv = TestServer::start().await;
    let acc = srv.account("upload-xlsx@example.com").await;
    let hash = panel(&srv, &acc).await;
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    let header = [
        "Name",
        "Surname",
        "Legal status",
        "Status",
        "Password",
        "Email address",
        "Phone number",
    ];
    for (c, h) in header.iter().enumerate() {
        sheet
            .write_string(0, u16::try_from(c).unwrap(), *h)
            .unwrap();
    }
    for (r, login) in ["x1@upload.example", "x2@upload.example"]
        .iter()
        .enumerate()
    {
        let r = u32::try_from(r + 1).unwrap();
        sheet.write_string(r, 0, "Ann").unwrap();
        sheet.write_string(r, 1, "Lee").unwrap();
        sheet.write_number(r, 2, 1.0).unwrap();
        sheet.write_number(r, 3, 1.0).unwrap();
        sheet.write_string(r, 4, "secret-9").unwrap();
        sheet.write_string(r, 5, *login).unwrap();
        sheet.write_number(r, 6, 77011234567.0).unwrap();
    }
    let answer = upload(&srv, &hash, "users.xlsx", book.save_to_buffer().unwrap()).await;
    assert_eq!(answer.ok()["total"], 2);
    let list = srv
        .post(
            "/v2/panel/user/list",
            json!({"hash": hash, "filter": "x2@upload"}),
        )
        .await;
    assert_eq!(
        list.ok()["list"][0]["phone"],
        "77011234567",
        "a number cell reads as typed"
    );
    srv.login("x2@upload.example", "secret-9").await;
}

#[tokio::test]
async fn nothing_is_created_unless_every_row_is_good() {
    let srv = TestServer::start().await;
    let acc = srv.account("upload-bad@example.com").await;
    let hash = panel(&srv, &acc).await;
    let before = logins(&srv, &hash).await;

    // Row 2: no surname, a bad status, a short password; row 3: a legal
    // entity without its address and legal name.
    let file = format!(
        "{HEADER}\n{}\nbad@upload.example;12345;maybe;1;;Dana;;;;;;;;;;;;;;;;;;;\nco@upload.example;secret-1;1;2;Lee;Ann;;;;;;;;;;;;;;;;;;;\n",
        csv_row("good@upload.example", "1")
            .replace(";Fleet LLP;", ";;")
            .replace(";77-01;", ";;")
    );
    let answer = upload(&srv, &hash, "users.csv", file.into_bytes()).await;
    answer.error(7, 400);
    let found = rows(&answer);
    for expected in [
        (2, "Surname"),
        (2, "Status"),
        (2, "Password"),
        (3, "Country"),
        (3, "Legal name"),
        (3, "Zip code"),
    ] {
        assert!(
            found.contains(&(expected.0, expected.1.to_owned())),
            "{expected:?} in {found:?}"
        );
    }
    assert!(found.iter().all(|(row, _)| *row != 1), "{found:?}");
    assert_eq!(logins(&srv, &hash).await, before, "nothing created");

    // 273: a login twice in the file (any case), both rows named after the first.
    let file = format!(
        "{HEADER}\n{}\n{}\n{}\n",
        csv_row("dup@upload.example", "2"),
        csv_row("other@upload.example", "2"),
        csv_row("DUP@upload.example", "2")
    );
    let answer = upload(&srv, &hash, "users.csv", file.into_bytes()).await;
    answer.error(273, 400);
    assert_eq!(rows(&answer), [(3, "Email address".to_owned())]);
    // 206: a login registered already.
    let file = format!(
        "{HEADER}\n{}\n{}\n",
        csv_row("fresh@upload.example", "2"),
        csv_row(&acc.login, "2")
    );
    let answer = upload(&srv, &hash, "users.csv", file.into_bytes()).await;
    answer.error(206, 400);
    assert_eq!(rows(&answer), [(2, "Email address".to_owned())]);
    // 274: a header and nothing else, or nothing at all.
    for empty in [format!("{HEADER}\n\n;;;\n"), String::new()] {
        upload(&srv, &hash, "users.csv", empty.into_bytes())
            .await
            .error(274, 400);
    }
    // A header without a required column, or with an unknown one: 7 naming the file.
    for header in [
        HEADER.replace("Surname*;", ""),
        format!("{HEADER};Shoe size"),
    ] {
        let file = format!("{header}\n{}\n", csv_row("h@upload.example", "2"));
        let description = upload(&srv, &hash, "users.csv", file.into_bytes())
            .await
            .error(7, 400)
            .to_owned();
        assert!(description.contains("`file`"), "{description}");
    }
    assert_eq!(logins(&srv, &hash).await, before, "still nothing created");
}

#[tokio::test]
async fn uploads_need_users_create() {
    let srv = TestServer::start().await;
    let (dealer, password) = srv.dealer(Some(vec![Permission::UsersRead])).await;
    let hash = srv.panel_session(dealer, &password).await;
    let file = format!("{HEADER}\n{}\n", csv_row("p@upload.example", "2"));
    upload(&srv, &hash, "users.csv", file.clone().into_bytes())
        .await
        .error(13, 403);
    let (dealer, password) = srv.dealer(Some(vec![Permission::UsersCreate])).await;
    let hash = srv.panel_session(dealer, &password).await;
    assert_eq!(
        upload(&srv, &hash, "users.csv", file.into_bytes())
            .await
            .ok()["total"],
        1
    );
}
