//! `POST /v2/file/upload` and `/v2/vehicle/batch_convert` (clarification
//! 35): lines pasted or uploaded (TSV, CSV with `,` or `;`, XLS, XLSX) come
//! back as unstored vehicle objects with every mistake of every line named,
//! at most 500 lines; files belong to the account, expire, and are bounded
//! in size and number.

use api::ApiConfig;
use platform::{Right, UploadRules};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::server::generous_limits;
use crate::{Answer, TestServer};

/// The Excel 97-2003 file written by `scripts/make_xls_fixture.py`.
const XLS_FIXTURE: &[u8] = include_bytes!("fixtures/vehicles.xls");

async fn upload(srv: &TestServer, hash: &str, name: &str, content: Vec<u8>) -> Answer {
    let form = Form::new()
        .text("hash", hash.to_owned())
        .part("file", Part::bytes(content).file_name(name.to_owned()));
    srv.send(
        srv.client()
            .post(srv.url("/v2/file/upload"))
            .multipart(form),
    )
    .await
}

async fn file_id(srv: &TestServer, hash: &str, name: &str, content: Vec<u8>) -> String {
    upload(srv, hash, name, content).await.ok()["file_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn convert(srv: &TestServer, params: Value) -> Answer {
    srv.post("/v2/vehicle/batch_convert", params).await
}

/// Each line's `errors` as `parameter` names.
fn errors(answer: &Answer) -> Vec<Vec<String>> {
    answer.ok()["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["parameter"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

fn xlsx(rows: &[&[&str]]) -> Vec<u8> {
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    for (r, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (u32::try_from(r).unwrap(), u16::try_from(c).unwrap());
            match cell.parse::<f64>() {
                Ok(n) => sheet.write_number(r, c, n).unwrap(),
                Err(_) => sheet.write_string(r, c, *cell).unwrap(),
            };
        }
    }
    book.save_to_buffer().unwrap()
}

#[tokio::test]
async fn pasted_lines_come_back_as_vehicles_with_every_mistake_named() {
    let srv = TestServer::start().await;
    let acc = srv.account("batch@example.com").await;
    let batch = "Truck 1\tVolvo FH\tA 001 AA\tDT\n\
                 \n\
                 \tMAN\tTOO-LONG-REG-NUMBER-1\tAI-95\n\
                 Van 3\tFord Transit\n";
    let answer = convert(&srv, json!({"hash": acc.key, "batch": batch})).await;
    assert_eq!(answer.ok()["limit_exceeded"], false);
    let list = answer.ok()["list"].as_array().unwrap();
    assert_eq!(list.len(), 3, "the blank line is skipped: {list:?}");
    assert_eq!(
        (
            &list[0]["label"],
            &list[0]["model"],
            &list[0]["reg_number"],
            &list[0]["fuel_grade"],
            &list[0]["type"]
        ),
        (
            &json!("Truck 1"),
            &json!("Volvo FH"),
            &json!("A 001 AA"),
            &json!("DT"),
            &json!("car")
        )
    );
    assert_eq!(
        errors(&answer),
        [
            vec![],
            vec!["label".to_owned(), "reg_number".to_owned()],
            vec![]
        ]
    );
    let bad = &list[1]["errors"][1];
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("0 to 15 characters"),
        "{bad}"
    );
    assert_eq!(
        list[2]["reg_number"], "",
        "a short line leaves the rest empty"
    );
    // Nothing is stored.
    assert!(srv.list("/v2/vehicle/list", &acc.key).await.is_empty());
}

#[tokio::test]
async fn fields_choose_the_columns_and_are_checked() {
    let srv = TestServer::start().await;
    let acc = srv.account("batch-fields@example.com").await;
    let fields = json!([
        "label",
        "type",
        "subtype",
        "fuel_tank_volume",
        "norm_avg_fuel_consumption",
        "liability_insurance_valid_till"
    ]);
    let batch = "Bus 1\tbus\tcity\t300\t28,5\t2027-01-31\nTruck\tlorry\t\t-1\tlots\t31.01.2027\n";
    let answer = convert(
        &srv,
        json!({"hash": acc.key, "batch": batch, "fields": fields}),
    )
    .await;
    let list = answer.ok()["list"].as_array().unwrap();
    assert_eq!(
        (
            &list[0]["type"],
            &list[0]["subtype"],
            &list[0]["fuel_tank_volume"],
            &list[0]["norm_avg_fuel_consumption"],
            &list[0]["liability_insurance_valid_till"]
        ),
        (
            &json!("bus"),
            &json!("city"),
            &json!(300),
            &json!(28.5),
            &json!("2027-01-31")
        )
    );
    assert_eq!(
        errors(&answer)[1],
        [
            "type",
            "norm_avg_fuel_consumption",
            "fuel_tank_volume",
            "liability_insurance_valid_till"
        ]
    );

    // The same call as a form and as a query string (`fields` as JSON text).
    let fields_text = fields.to_string();
    let form = srv
        .post_form(
            "/v2/vehicle/batch_convert",
            &[
                ("hash", acc.key.as_str()),
                ("batch", batch),
                ("fields", &fields_text),
            ],
        )
        .await;
    assert_eq!(form.ok()["list"], answer.ok()["list"]);
    let query = srv
        .get(
            "/v2/vehicle/batch_convert",
            &[
                ("hash", acc.key.as_str()),
                ("batch", batch),
                ("fields", &fields_text),
            ],
        )
        .await;
    assert_eq!(query.ok()["list"], answer.ok()["list"]);

    for (fields, item) in [
        (json!(["label", "tracker_id"]), "fields[1]"),
        (json!(["vin", "vin"]), "fields[1]"),
        (json!([]), "fields"),
    ] {
        let description = convert(
            &srv,
            json!({"hash": acc.key, "batch": "x", "fields": fields}),
        )
        .await
        .error(7, 400)
        .to_owned();
        assert!(description.contains(item), "{description}");
    }
    let description = convert(&srv, json!({"hash": acc.key}))
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("batch"), "{description}");
}

#[tokio::test]
async fn at_most_500_lines_are_converted_and_a_cut_is_said_and_counted() {
    let srv = TestServer::start().await;
    let acc = srv.account("batch-limit@example.com").await;
    let lines = |n: usize| {
        (0..n)
            .map(|i| format!("V{i}\tM\tR{i}\tD\n"))
            .collect::<String>()
    };
    let full = convert(&srv, json!({"hash": acc.key, "batch": lines(500)})).await;
    assert_eq!(full.ok()["list"].as_array().unwrap().len(), 500);
    assert_eq!(full.ok()["limit_exceeded"], false);
    let cut = convert(&srv, json!({"hash": acc.key, "batch": lines(501)})).await;
    assert_eq!(cut.ok()["list"].as_array().unwrap().len(), 500);
    assert_eq!(cut.ok()["limit_exceeded"], true);
    assert_eq!(cut.ok()["list"][499]["label"], "V499");
    let metrics = srv.metrics_text().await;
    assert!(
        metrics.contains("trackhouse_api_limit_cuts_total{limit=\"batch_convert_max_lines\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn uploaded_tsv_csv_xls_and_xlsx_files_are_read_like_a_batch() {
    let srv = TestServer::start().await;
    let acc = srv.account("batch-files@example.com").await;
    let fields = json!([
        "label",
        "model",
        "reg_number",
        "fuel_tank_volume",
        "norm_avg_fuel_consumption",
        "liability_insurance_valid_till"
    ]);

    let tsv = file_id(
        &srv,
        &acc.key,
        "fleet.tsv",
        b"Truck 1\tVolvo FH\tA 001 AA\t400\n".to_vec(),
    )
    .await;
    let csv = file_id(
        &srv,
        &acc.key,
        "fleet.csv",
        "\u{feff}\"Truck; one\";Volvo FH;A 001 AA;400;28,5\r\nГрузовик;КамАЗ;B 002 BB;600;31\r\n"
            .as_bytes()
            .to_vec(),
    )
    .await;
    let book = xlsx(&[
        &["Truck 1", "Volvo FH", "A 001 AA", "400", "28.5"],
        &[],
        &["", "MAN", "C 3", "-5"],
    ]);
    let xlsx = file_id(&srv, &acc.key, "fleet.xlsx", book).await;
    let xls = file_id(&srv, &acc.key, "fleet.xls", XLS_FIXTURE.to_vec()).await;

    let read = |file: String| {
        let srv = &srv;
        let params =
            json!({"hash": acc.key, "file_id": file, "fields": fields, "batch": "ignored"});
        async move { convert(srv, params).await }
    };
    let answer = read(tsv).await;
    assert_eq!(answer.ok()["list"][0]["fuel_tank_volume"], 400);
    assert_eq!(
        answer.ok()["list"].as_array().unwrap().len(),
        1,
        "batch is ignored"
    );

    let answer = read(csv).await;
    let list = answer.ok()["list"].as_array().unwrap();
    assert_eq!(list[0]["label"], "Truck; one");
    assert_eq!(list[0]["norm_avg_fuel_consumption"], 28.5);
    assert_eq!(list[1]["model"], "КамАЗ");
    assert_eq!(errors(&answer), [Vec::<String>::new(), vec![]]);

    let answer = read(xlsx).await;
    let list = answer.ok()["list"].as_array().unwrap();
    assert_eq!(list.len(), 2, "the empty row is skipped");
    assert_eq!(list[0]["fuel_tank_volume"], 400);
    assert_eq!(list[0]["norm_avg_fuel_consumption"], 28.5);
    assert_eq!(errors(&answer)[1], ["label", "fuel_tank_volume"]);

    let answer = read(xls).await;
    let list = answer.ok()["list"].as_array().unwrap();
    assert_eq!(list.len(), 3, "{list:?}");
    assert_eq!(list[1]["label"], "Грузовик 2");
    assert_eq!(list[0]["liability_insurance_valid_till"], "2027-03-01");
    assert_eq!(list[1]["norm_avg_fuel_consumption"], 31.25);
    assert_eq!(errors(&answer)[2], ["label", "fuel_tank_volume"]);

    // A damaged spreadsheet names the file.
    let broken = file_id(
        &srv,
        &acc.key,
        "broken.xlsx",
        b"PK\x03\x04 not a zip".to_vec(),
    )
    .await;
    let description = convert(&srv, json!({"hash": acc.key, "file_id": broken}))
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("file_id"), "{description}");
}

#[tokio::test]
async fn files_belong_to_the_account_and_expire() {
    let srv = TestServer::start().await;
    let acc = srv.account("batch-owner@example.com").await;
    let other = srv.account("batch-other@example.com").await;
    // A sub-user's upload is the account's; converting needs `vehicle_update`.
    let editor = srv
        .subuser(&acc, "batch-editor@example.com", vec![Right::VehicleUpdate])
        .await;
    let viewer = srv.subuser(&acc, "batch-viewer@example.com", vec![]).await;
    let file = file_id(&srv, &editor, "a.tsv", b"One\n".to_vec()).await;
    convert(&srv, json!({"hash": acc.key, "file_id": file}))
        .await
        .ok();
    convert(&srv, json!({"hash": viewer, "file_id": file}))
        .await
        .error(13, 403);
    convert(&srv, json!({"hash": other.key, "file_id": file}))
        .await
        .error(201, 400);
    convert(
        &srv,
        json!({"hash": acc.key, "file_id": "0123456789abcdef0123456789abcdef"}),
    )
    .await
    .error(201, 400);
    convert(&srv, json!({"hash": acc.key, "file_id": "not a key"}))
        .await
        .error(201, 400);
    // Kept for 24 hours.
    srv.clock.advance(chrono::Duration::hours(23));
    convert(&srv, json!({"hash": acc.key, "file_id": file}))
        .await
        .ok();
    srv.clock.advance(chrono::Duration::hours(2));
    convert(&srv, json!({"hash": acc.key, "file_id": file}))
        .await
        .error(201, 400);
}

#[tokio::test]
async fn uploads_are_bounded_and_take_one_file_part_by_post() {
    let srv = TestServer::start_with(ApiConfig {
        rate_limits: generous_limits(),
        uploads: UploadRules {
            max_bytes: 1_000,
            max_files: 2,
            ..UploadRules::default()
        },
        ..ApiConfig::default()
    })
    .await;
    let acc = srv.account("batch-bounds@example.com").await;
    upload(&srv, &acc.key, "edge.tsv", vec![b'a'; 1_000])
        .await
        .ok();
    let description = upload(&srv, &acc.key, "big.tsv", vec![b'a'; 1_001])
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("file"), "{description}");
    upload(&srv, &acc.key, "two.tsv", b"x".to_vec()).await.ok();
    upload(&srv, &acc.key, "three.tsv", b"x".to_vec())
        .await
        .error(268, 402);
    // Another account has a quota of its own; the credential may be a header.
    let other = srv.account("batch-bounds-2@example.com").await;
    let form = Form::new().part("file", Part::bytes(b"x".to_vec()).file_name("h.tsv"));
    srv.send(
        srv.client()
            .post(srv.url("/v2/file/upload"))
            .header("Authorization", format!("NVX {}", other.key))
            .multipart(form),
    )
    .await
    .ok();

    // No part `file`, or two of them: 7 naming `file`.
    let form = Form::new()
        .text("hash", other.key.clone())
        .text("file", "not a file part");
    let description = srv
        .send(
            srv.client()
                .post(srv.url("/v2/file/upload"))
                .multipart(form),
        )
        .await
        .error(7, 400)
        .to_owned();
    assert!(description.contains("file"), "{description}");
    let form = Form::new()
        .text("hash", other.key.clone())
        .part("file", Part::bytes(b"a".to_vec()).file_name("a"))
        .part("file", Part::bytes(b"b".to_vec()).file_name("b"));
    srv.send(
        srv.client()
            .post(srv.url("/v2/file/upload"))
            .multipart(form),
    )
    .await
    .error(7, 400);
    // A body that is not multipart: nothing to keep. GET: not this call's method.
    srv.post("/v2/file/upload", json!({"hash": other.key}))
        .await
        .error(7, 400);
    srv.get("/v2/file/upload", &[("hash", other.key.as_str())])
        .await
        .error(112, 400);
    // Without a credential: 3.
    let form = Form::new().part("file", Part::bytes(b"x".to_vec()).file_name("h.tsv"));
    srv.send(
        srv.client()
            .post(srv.url("/v2/file/upload"))
            .multipart(form),
    )
    .await
    .error(3, 400);
    // A malformed multipart body: 5.
    srv.send(
        srv.client()
            .post(srv.url("/v2/file/upload"))
            .header("content-type", "multipart/form-data; boundary=XYZ")
            .body("--XYZ\r\nbroken"),
    )
    .await
    .error(5, 400);
}
