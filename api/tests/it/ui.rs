//! The hosted pages served by the server (the embedded `web/dist`), and the routes added for
//! them: what the app needs from the binary, over the real endpoint.
use crate::common::*;
use poem::http::Method;
use serde_json::json;

const PW: &str = "correct-horse-battery";

#[tokio::test]
async fn the_app_is_served_at_its_paths_with_a_fallback_to_index() {
    assert!(
        gatehouse_api::ui::available(),
        "web/dist is committed and embedded"
    );
    let h = harness().await;
    let index = h.get("/", None).await.expect(200);
    assert!(index.text.contains("<div id=\"root\"></div>"));
    for path in [
        "/sign-in",
        "/sign-up",
        "/forgot-password",
        "/reset-password",
        "/verify-email",
        "/error",
        "/account",
        "/organizations",
        "/organizations/abc/members",
        "/accept-invitation/abc",
        "/admin",
    ] {
        let r = h.get(path, None).await.expect(200);
        assert_eq!(r.text, index.text, "{path}");
        assert_eq!(
            r.headers.get("content-type").unwrap(),
            "text/html; charset=utf-8"
        );
        assert_eq!(r.headers.get("cache-control").unwrap(), "no-cache");
        let csp = r.headers.get("content-security-policy").unwrap();
        assert!(csp.to_str().unwrap().contains("frame-ancestors 'none'"));
        assert!(csp.to_str().unwrap().contains("script-src 'self'"));
        assert_eq!(r.headers.get("x-frame-options").unwrap(), "DENY");
        // The reset page's URL carries its token: no Referer may leak it.
        assert_eq!(r.headers.get("referrer-policy").unwrap(), "no-referrer");
    }
    // The script the index names is served, cached for good (its name carries its hash).
    let script = index
        .text
        .split("src=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    assert!(script.starts_with("/assets/"), "{script}");
    let js = h.get(&script, None).await.expect(200);
    assert_eq!(
        js.headers.get("content-type").unwrap(),
        "text/javascript; charset=utf-8"
    );
    assert!(js
        .headers
        .get("cache-control")
        .unwrap()
        .to_str()
        .unwrap()
        .contains("immutable"));
    // A missing file is a 404, not the app.
    let r = h.get("/assets/missing-abc.js", None).await.expect(404);
    assert!(!r.text.contains("root"));
}

#[tokio::test]
async fn api_paths_never_fall_back_to_the_app() {
    let h = harness().await;
    for path in ["/api/auth/no-such-route", "/api/other", "/health/nothing"] {
        let r = h.get(path, None).await.expect(404);
        assert_eq!(r.json()["code"], "NOT_FOUND", "{path}");
    }
    // Only GET and HEAD reach the pages; a POST to a page path is the API's 404.
    let r = h
        .call(
            Method::POST,
            "/account",
            Some(json!({})),
            None,
            &[("origin", ORIGIN)],
        )
        .await
        .expect(404);
    assert_eq!(r.json()["code"], "NOT_FOUND");
}

#[tokio::test]
async fn the_permission_catalogue_lists_resources_roles_and_owner_only_rights() {
    let h = harness_with(|c| {
        c.organization.roles.insert(
            "auditor".into(),
            [("ac".to_string(), vec!["read".to_string()])]
                .into_iter()
                .collect(),
        );
    })
    .await;
    h.get("/api/auth/organization/permission-catalog", None)
        .await
        .expect(401);
    let cookie = h.sign_up("ann@example.com", PW).await.cookie_header();
    let r = h
        .get("/api/auth/organization/permission-catalog", Some(&cookie))
        .await
        .expect(200);
    let body = r.json();
    let resources: Vec<(String, Vec<String>)> = body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["resource"].as_str().unwrap().to_owned(),
                r["actions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    let expected: Vec<(String, Vec<String>)> = policy_resources();
    assert_eq!(resources, expected);
    let roles: Vec<&str> = body["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["owner", "admin", "member", "auditor"]);
    assert_eq!(body["roles"][0]["builtIn"], true);
    assert_eq!(body["roles"][3]["builtIn"], false);
    assert_eq!(body["roles"][3]["permission"], json!({"ac": ["read"]}));
    assert_eq!(
        body["roles"][2]["permission"],
        json!({"ac": ["read"]}),
        "members read roles only"
    );
    assert_eq!(
        body["roles"][0]["permission"]["organization"],
        json!(["delete", "update"])
    );
    assert_eq!(body["ownerOnly"], json!({"organization": ["delete"]}));
}

fn policy_resources() -> Vec<(String, Vec<String>)> {
    vec![
        (
            "organization".into(),
            vec!["update".into(), "delete".into()],
        ),
        (
            "member".into(),
            vec!["create".into(), "update".into(), "delete".into()],
        ),
        ("invitation".into(), vec!["create".into(), "cancel".into()]),
        (
            "team".into(),
            vec!["create".into(), "update".into(), "delete".into()],
        ),
        (
            "ac".into(),
            vec![
                "create".into(),
                "read".into(),
                "update".into(),
                "delete".into(),
            ],
        ),
        (
            "apiKey".into(),
            vec![
                "create".into(),
                "read".into(),
                "update".into(),
                "delete".into(),
            ],
        ),
        (
            "webhook".into(),
            vec![
                "create".into(),
                "read".into(),
                "update".into(),
                "delete".into(),
            ],
        ),
    ]
}

#[tokio::test]
async fn invitation_links_carry_the_address_for_the_hosted_page() {
    let h = harness().await;
    let owner = h.sign_up("ann@example.com", PW).await.cookie_header();
    h.post(
        "/api/auth/organization/create",
        json!({"name": "Acme", "slug": "acme"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "bob+team@example.com", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let mail = last_mail(&h, "invitation", "bob+team@example.com").unwrap();
    assert_eq!(
        mail["link"],
        format!(
            "http://localhost:3000/accept-invitation/{}?email=bob%2Bteam%40example.com",
            inv["id"].as_str().unwrap()
        )
    );
}

#[test]
fn the_document_types_every_error_code() {
    let doc: serde_json::Value = serde_json::from_str(&gatehouse_api::openapi_json()).unwrap();
    let codes: Vec<&str> = doc["components"]["schemas"]["Error"]["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for code in gatehouse_api::error::Code::ALL {
        assert!(codes.contains(&code.code()), "{}", code.code());
    }
    let mut sorted = codes.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(codes, sorted, "sorted, each once");
}

#[test]
fn the_document_types_every_audit_action() {
    let doc: serde_json::Value = serde_json::from_str(&gatehouse_api::openapi_json()).unwrap();
    let actions: Vec<&str> = doc["components"]["schemas"]["AuditEvent"]["properties"]["action"]
        ["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(actions, gatehouse_api::audit::action::ALL);
}
