//! The served document: `/openapi.json` is the document of the routes, every
//! path it names is answered by a call (not 111), the methods it leaves out
//! are 112, and `/docs` renders it.

use crate::TestServer;

#[tokio::test]
async fn the_served_document_names_every_answered_call() {
    let server = TestServer::start().await;
    let served = server.get("/openapi.json", &[]).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.body, api::openapi_document());
    assert_eq!(served.body["openapi"], "3.1.0");
    let paths = served.body["paths"].as_object().expect("paths");
    assert!(paths.len() >= 18, "{} paths", paths.len());
    for (path, item) in paths {
        let concrete = path.replace("{tracker_id}", "1");
        for method in ["get", "post"] {
            let request = server.client().request(
                method.to_uppercase().parse().expect("method"),
                server.url(&concrete),
            );
            let answer = server.send(request).await;
            let code = answer.body["status"]["code"].as_i64();
            if item.get(method).is_some() {
                // Documented: some call answers it (whatever it thinks of the empty request).
                assert_ne!(code, Some(111), "{method} {path}: {answer:?}");
                assert_ne!(code, Some(112), "{method} {path}: {answer:?}");
            } else {
                // Not documented: the spec's wrong-method error, as the error object.
                assert_eq!(
                    (answer.status, code),
                    (400, Some(112)),
                    "{method} {path}: {answer:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_reference_page_loads_the_document() {
    let server = TestServer::start().await;
    let response = server
        .client()
        .get(server.url("/docs"))
        .send()
        .await
        .expect("GET /docs");
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let page = response.text().await.expect("page");
    assert!(page.contains("<rapi-doc"), "{page}");
    assert!(page.contains("\"openapi.json\""), "{page}");
    // With the trailing slash the page finds the document one level up.
    assert!(page.contains("\"../openapi.json\""), "{page}");
    let slashed = server.get("/docs/", &[]).await;
    assert_eq!(slashed.status, 200);
}
