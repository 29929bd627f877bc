//! Input and the contract: bad bodies, validation details, error codes, the committed OpenAPI document, unknown routes.

use super::*;

#[tokio::test]
async fn malformed_bodies_never_500() {
    let h = harness().await;
    for (ct, body) in [
        ("application/json", "{\"email\":"),
        ("application/json", ""),
        ("application/json", "null"),
        ("text/plain", "hello"),
        ("application/json", "\u{0}\u{1}"),
    ] {
        let req = poem::Request::builder()
            .method(Method::POST)
            .uri_str("/api/auth/sign-in/email")
            .header("content-type", ct)
            .body(body.to_owned());
        let resp = poem::Endpoint::call(&*h.ep, req).await.unwrap();
        let status = resp.status().as_u16();
        assert!(status == 400 || status == 415, "{ct} {body:?} → {status}");
        let v: serde_json::Value =
            serde_json::from_str(&resp.into_body().into_string().await.unwrap()).unwrap();
        assert!(v["code"].is_string() && v["message"].is_string());
    }
}

#[tokio::test]
async fn validation_details_name_the_field_and_why() {
    let h = harness().await;
    for (body, detail) in [
        (
            r#"{"email":"a@b.co","password":"long-enough-1"}"#,
            "name: required",
        ),
        (
            r#"{"name":"A","email":5,"password":"long-enough-1"}"#,
            "email: expected a string, found an integer",
        ),
        (
            r#"{"name":"A","email":"a@b.co","password":"long-enough-1","rememberMe":"no"}"#,
            "rememberMe: expected a boolean, found a string",
        ),
    ] {
        let req = poem::Request::builder()
            .method(Method::POST)
            .uri_str("/api/auth/sign-up/email")
            .header("content-type", "application/json")
            .body(body.to_owned());
        let resp = poem::Endpoint::call(&*h.ep, req).await.unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{body}");
        let v: serde_json::Value =
            serde_json::from_str(&resp.into_body().into_string().await.unwrap()).unwrap();
        assert_eq!(v["code"], "VALIDATION_ERROR");
        assert_eq!(v["details"], serde_json::json!([detail]), "{body}");
    }
}

#[tokio::test]
async fn limits_unknown_routes_and_meta() {
    let h = harness_with(|c| c.max_body_bytes = 1024).await;
    let big = json!({"name": "x".repeat(2000), "email": "a@b.com", "password": PW});
    let r = h
        .post("/api/auth/sign-up/email", big, None)
        .await
        .expect(413);
    assert_eq!(r.code(), "PAYLOAD_TOO_LARGE");
    let r = h.get("/api/auth/no-such-route", None).await.expect(404);
    assert_eq!(
        r.json(),
        json!({"code": "NOT_FOUND", "message": "Not found"})
    );
    // Other paths are the hosted app's (it shows its own "not found" page); a missing file is
    // a 404.
    assert!(h
        .get("/elsewhere", None)
        .await
        .expect(200)
        .text
        .contains("id=\"root\""));
    h.get("/elsewhere.php", None).await.expect(404);
    assert_eq!(
        h.get("/api/auth/ok", None).await.expect(200).json(),
        json!({"ok": true})
    );
    let page = h
        .get(
            "/api/auth/error?error=%3Cscript%3Ealert(1)%3C/script%3E",
            None,
        )
        .await
        .expect(200);
    assert!(page
        .headers
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.text.contains("<script>"));
    assert!(page.text.contains("href=\"/\""));
    let page = h
        .get("/api/auth/error?error=invalid_token", None)
        .await
        .expect(200);
    assert!(page.text.contains("invalid_token"));
    let served = h.get("/api/auth/openapi.json", None).await.expect(200);
    let spec = served.json();
    assert_eq!(spec["openapi"].as_str().unwrap().chars().next(), Some('3'));
    // The reference page (made on its first request) embeds the served document, twice alike.
    for _ in 0..2 {
        let ui = h.get("/api/auth/reference", None).await.expect(200);
        assert!(ui.text.to_lowercase().contains("<html"));
        assert!(ui.text.contains(&served.text));
    }
}

#[test]
fn every_error_code_has_its_pinned_status() {
    let expected: &[(&str, u16)] = &[
        ("VALIDATION_ERROR", 400),
        ("INVALID_JSON", 400),
        ("INVALID_EMAIL", 400),
        ("PASSWORD_TOO_SHORT", 400),
        ("PASSWORD_TOO_LONG", 400),
        ("SESSION_NOT_FOUND", 400),
        ("FAILED_TO_GET_SESSION", 400),
        ("EMAIL_CAN_NOT_BE_UPDATED", 400),
        ("FIELD_NOT_ALLOWED", 400),
        ("NO_FIELDS_TO_UPDATE", 400),
        ("VERIFICATION_EMAIL_ISNT_ENABLED", 400),
        ("RESET_PASSWORD_ISNT_ENABLED", 400),
        ("INVALID_TOKEN", 400),
        ("TOKEN_EXPIRED", 400),
        ("USER_NOT_FOUND", 400),
        ("INVALID_PASSWORD", 400),
        ("CREDENTIAL_ACCOUNT_NOT_FOUND", 400),
        ("USER_ALREADY_HAS_PASSWORD", 400),
        ("SESSION_EXPIRED", 400),
        ("CHANGE_EMAIL_IS_DISABLED", 400),
        ("EMAIL_IS_THE_SAME", 400),
        ("COULDNT_UPDATE_YOUR_EMAIL", 400),
        ("FAILED_TO_UNLINK_LAST_ACCOUNT", 400),
        ("ACCOUNT_NOT_FOUND", 400),
        ("DELETE_USER_IS_DISABLED", 400),
        ("EMAIL_NOT_VERIFIED", 403),
        ("ORGANIZATION_NOT_FOUND", 400),
        ("ORGANIZATION_ALREADY_EXISTS", 400),
        ("SLUG_IS_TAKEN", 400),
        ("NO_ACTIVE_ORGANIZATION", 400),
        ("MEMBER_NOT_FOUND", 400),
        ("USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION", 400),
        ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER", 400),
        ("YOU_CANNOT_LEAVE_THE_ORGANIZATION_WITHOUT_AN_OWNER", 400),
        ("ORGANIZATION_SLUG_ALREADY_TAKEN", 400),
        ("YOU_ARE_NOT_A_MEMBER_OF_THIS_ORGANIZATION", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", 400),
        ("ROLE_NOT_FOUND", 400),
        ("YOU_HAVE_REACHED_THE_MAXIMUM_NUMBER_OF_ORGANIZATIONS", 403),
        ("ORGANIZATION_MEMBERSHIP_LIMIT_REACHED", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION", 403),
        ("FORBIDDEN", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_ORGANIZATION", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION", 403),
        (
            "YOU_ARE_NOT_ALLOWED_TO_INVITE_USERS_TO_THIS_ORGANIZATION",
            403,
        ),
        ("YOU_ARE_NOT_ALLOWED_TO_CANCEL_THIS_INVITATION", 403),
        (
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_TEAMS_IN_THIS_ORGANIZATION",
            403,
        ),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_TEAM", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_NEW_TEAM_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_REMOVE_A_TEAM_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_TEAM", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_READ_A_ROLE", 403),
        ("SERVER_CREDENTIAL_REQUIRED", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_A_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER", 401),
        ("YOU_ARE_NOT_ALLOWED_TO_INVITE_USER_WITH_THIS_ROLE", 403),
        ("INVITATION_NOT_FOUND", 400),
        ("INVITER_IS_NO_LONGER_A_MEMBER_OF_THE_ORGANIZATION", 400),
        ("INVITATION_LIMIT_REACHED", 403),
        ("EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION", 403),
        ("TEAM_ALREADY_EXISTS", 400),
        ("UNABLE_TO_REMOVE_LAST_TEAM", 400),
        ("ROLE_NAME_IS_ALREADY_TAKEN", 400),
        ("ROLE_IS_ASSIGNED_TO_MEMBERS", 400),
        ("USER_IS_ALREADY_INVITED_TO_THIS_ORGANIZATION", 400),
        ("TEAM_NOT_FOUND", 400),
        ("YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION", 403),
        (
            "EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION",
            403,
        ),
        ("INVALID_EMAIL_OR_PASSWORD", 401),
        ("UNAUTHORIZED", 401),
        ("INVALID_ORIGIN", 403),
        ("MISSING_OR_NULL_ORIGIN", 403),
        ("INVALID_CALLBACK_URL", 403),
        ("INVALID_REDIRECT_URL", 403),
        ("INVALID_ERROR_CALLBACK_URL", 403),
        ("INVALID_NEW_USER_CALLBACK_URL", 403),
        ("SESSION_NOT_FRESH", 403),
        ("NOT_FOUND", 404),
        ("PROVIDER_NOT_FOUND", 404),
        ("ID_TOKEN_NOT_SUPPORTED", 404),
        ("INVALID_TOKEN", 401),
        ("USER_EMAIL_NOT_FOUND", 401),
        ("OAUTH_LINK_ERROR", 401),
        ("LINKING_NOT_ALLOWED", 401),
        ("LINKING_DIFFERENT_EMAILS_NOT_ALLOWED", 401),
        ("SOCIAL_ACCOUNT_ALREADY_LINKED", 409),
        ("PROVIDER_NOT_SUPPORTED", 400),
        ("PROVIDER_NOT_CONFIGURED", 400),
        ("FAILED_TO_GET_ACCESS_TOKEN", 400),
        ("TOKEN_REFRESH_NOT_SUPPORTED", 400),
        ("REFRESH_TOKEN_NOT_FOUND", 400),
        ("FAILED_TO_REFRESH_ACCESS_TOKEN", 400),
        ("ACCESS_TOKEN_NOT_FOUND", 400),
        ("FAILED_TO_GET_USER_INFO", 401),
        ("FAILED_TO_GET_USER_INFO", 404),
        ("INVALID_TOKEN", 404),
        ("TOKEN_EXPIRED", 401),
        ("USER_NOT_FOUND", 401),
        ("EMAIL_MISMATCH", 400),
        ("EMAIL_ALREADY_VERIFIED", 400),
        ("BANNED_USER", 403),
        ("USER_NOT_FOUND", 404),
        ("YOU_CANNOT_BAN_YOURSELF", 400),
        ("YOU_CANNOT_REMOVE_YOURSELF", 400),
        ("YOU_CANNOT_IMPERSONATE_ADMINS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE", 400),
        ("USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL", 400),
        ("NO_DATA_TO_UPDATE", 400),
        ("PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER", 400),
        ("USER_ID_CANNOT_BE_UPDATED", 400),
        ("NOT_IMPERSONATING", 400),
        ("ADMIN_SESSION_NOT_FOUND", 400),
        ("INVALID_PERMISSION_CHECK", 400),
        ("YOU_ARE_NOT_ALLOWED_TO_CREATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_READ_THE_AUDIT_LOG", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_CHANGE_USERS_ROLE", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_BAN_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_IMPERSONATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_DELETE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_PASSWORD", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_GET_USER", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_UPDATE_USERS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_SET_USERS_EMAIL", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_LIST_USERS_SESSIONS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_REVOKE_USERS_SESSIONS", 403),
        ("METHOD_NOT_ALLOWED", 405),
        ("METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED", 405),
        ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", 403),
        ("USER_IS_NOT_A_MEMBER_OF_THE_TEAM", 400),
        ("PAYLOAD_TOO_LARGE", 413),
        ("TOO_MANY_REQUESTS", 429),
        ("INVALID_CODE", 401),
        ("INVALID_TWO_FACTOR_COOKIE", 401),
        ("TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE", 400),
        ("TOTP_NOT_ENABLED", 400),
        ("OTP_NOT_ENABLED", 400),
        ("TWO_FACTOR_NOT_ENABLED", 400),
        ("INVALID_BACKUP_CODE", 401),
        ("TOO_MANY_ATTEMPTS", 429),
        ("CHALLENGE_NOT_FOUND", 400),
        ("YOU_ARE_NOT_ALLOWED_TO_REGISTER_THIS_PASSKEY", 401),
        ("FAILED_TO_VERIFY_REGISTRATION", 400),
        ("PREVIOUSLY_REGISTERED", 400),
        ("PASSKEY_NOT_FOUND", 404),
        ("PASSKEY_NOT_FOUND", 401),
        ("AUTHENTICATION_FAILED", 401),
        // A passkey's counter gone back (audited as a suspected clone).
        ("AUTHENTICATION_FAILED", 401),
        ("AUTHENTICATION_FAILED", 400),
        ("LAST_SIGN_IN_METHOD", 400),
        ("INVALID_OTP", 400),
        ("OTP_EXPIRED", 400),
        // A mailed code past its tries (the two-factor lock above is 429).
        ("TOO_MANY_ATTEMPTS", 403),
        ("MAIL_NOT_CONFIGURED", 400),
        ("CHANGE_EMAIL_WITH_OTP_DISABLED", 400),
        ("INVALID_OTP_TYPE", 400),
        ("OTP_REQUIRED", 400),
        ("INVALID_API_KEY", 401),
        ("INVALID_API_KEY", 403),
        ("KEY_NOT_FOUND", 404),
        ("KEY_DISABLED", 401),
        ("KEY_EXPIRED", 401),
        ("USAGE_EXCEEDED", 429),
        ("RATE_LIMITED", 429),
        ("USER_BANNED", 401),
        ("UNAUTHORIZED", 401),
        ("INVALID_REFERENCE_ID_FROM_API_KEY", 401),
        ("UNAUTHORIZED_SESSION", 401),
        ("SERVER_ONLY_PROPERTY", 400),
        ("METADATA_DISABLED", 400),
        ("INVALID_METADATA_TYPE", 400),
        ("REFILL_AMOUNT_AND_INTERVAL_REQUIRED", 400),
        ("REFILL_INTERVAL_AND_AMOUNT_REQUIRED", 400),
        ("EXPIRES_IN_IS_TOO_SMALL", 400),
        ("EXPIRES_IN_IS_TOO_LARGE", 400),
        ("KEY_DISABLED_EXPIRATION", 400),
        ("INVALID_PREFIX_LENGTH", 400),
        ("INVALID_NAME_LENGTH", 400),
        ("NAME_REQUIRED", 400),
        ("NO_VALUES_TO_UPDATE", 400),
        ("INVALID_REMAINING", 400),
        ("USER_NOT_MEMBER_OF_ORGANIZATION", 403),
        ("INSUFFICIENT_API_KEY_PERMISSIONS", 403),
        ("WEBHOOK_NOT_FOUND", 404),
        ("WEBHOOK_DELIVERY_NOT_FOUND", 404),
        ("WEBHOOK_DELIVERY_PENDING", 409),
        ("INVALID_WEBHOOK_URL", 400),
        ("WEBHOOK_URL_NOT_ALLOWED", 400),
        ("INVALID_WEBHOOK_EVENTS", 400),
        ("TOO_MANY_WEBHOOKS", 403),
        ("YOU_ARE_NOT_ALLOWED_TO_MANAGE_WEBHOOKS", 403),
        ("REQUEST_TIMEOUT", 408),
        ("UNSUPPORTED_MEDIA_TYPE", 415),
        ("USER_ALREADY_EXISTS", 422),
        ("FAILED_TO_CREATE_USER", 422),
        ("FAILED_TO_CREATE_SESSION", 500),
        ("INTERNAL_SERVER_ERROR", 500),
        ("SERVICE_UNAVAILABLE", 503),
    ];
    assert_eq!(
        Code::ALL.len(),
        expected.len(),
        "a new code needs its status pinned here"
    );
    for code in Code::ALL {
        // A code may stand at two statuses (INVALID_TOKEN: a bad link token 400, a bad id
        // token 401, a delete link not the caller's 404; USER_NOT_FOUND: 400 on account routes, 404 on
        // admin routes), each pinned.
        assert!(
            expected
                .iter()
                .any(|(c, s)| *c == code.code() && *s == code.status().as_u16()),
            "{code:?} not pinned at {}",
            code.status()
        );
    }
}

#[test]
fn committed_openapi_document_matches_the_code() {
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../openapi/openapi.json"
    ))
    .expect("openapi/openapi.json is committed");
    let generated = gatehouse_api::openapi_json();
    assert!(
        committed.trim_end() == generated.trim_end(),
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    let mut ids = Vec::new();
    for (_, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            ids.push(op["operationId"].as_str().unwrap().to_owned());
            assert!(
                op["summary"].is_string(),
                "every operation documented: {op}"
            );
        }
    }
    for id in [
        "signUpEmail",
        "signInEmail",
        "signOut",
        "getSession",
        "listSessions",
        "revokeSession",
        "revokeSessions",
        "revokeOtherSessions",
        "updateUser",
        "sendVerificationEmail",
        "verifyEmail",
        "forgetPassword",
        "requestPasswordReset",
        "resetPassword",
        "resetPasswordCallback",
        "changePassword",
        "setPassword",
        "changeEmail",
        "deleteUser",
        "deleteUserCallback",
        "listAccounts",
        "unlinkAccount",
        "createOrganization",
        "checkSlug",
        "updateOrganization",
        "deleteOrganization",
        "listOrganizations",
        "setActiveOrganization",
        "getFullOrganization",
        "getActiveMember",
        "listMembers",
        "addMember",
        "removeMember",
        "leaveOrganization",
        "updateMemberRole",
        "hasPermission",
        "inviteMember",
        "acceptInvitation",
        "rejectInvitation",
        "cancelInvitation",
        "getInvitation",
        "listInvitations",
        "listUserInvitations",
        "getActiveMemberRole",
        "createTeam",
        "updateTeam",
        "removeTeam",
        "listOrganizationTeams",
        "setActiveTeam",
        "listUserTeams",
        "addTeamMember",
        "removeTeamMember",
        "listTeamMembers",
        "createOrgRole",
        "updateOrgRole",
        "deleteOrgRole",
        "listOrgRoles",
        "getOrgRole",
        "ok",
        "error",
    ] {
        assert!(ids.iter().any(|i| i == id), "missing operationId {id}");
    }
}

/// Issue #8: documented length caps (names 256 characters, URLs 2048, organization metadata
/// 8192 bytes) and a JSON nesting cap (32) answer 400 `VALIDATION_ERROR`, never store a 1 MB
/// name.
#[tokio::test]
async fn oversized_fields_and_deep_json_are_refused() {
    let h = harness().await;
    let long = |n: usize| "x".repeat(n);
    let r = h
        .post(
            "/api/auth/sign-up/email",
            json!({"name": long(300_000), "email": "big@example.com", "password": PW}),
            None,
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    assert!(
        r.json()["details"][0].as_str().unwrap().contains("name"),
        "{}",
        r.text
    );
    h.post(
        "/api/auth/sign-up/email",
        json!({"name": long(256), "email": "ok@example.com", "password": PW, "image": format!("https://i.example/{}", long(2000))}),
        None,
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/sign-up/email",
        json!({"name": "n", "email": "img@example.com", "password": PW, "image": long(2049)}),
        None,
    )
    .await
    .expect(400);
    let cookie = h.sign_up("ann@example.com", PW).await.cookie_header();
    for body in [json!({"name": long(257)}), json!({"image": long(2049)})] {
        let r = h
            .post("/api/auth/update-user", body, Some(&cookie))
            .await
            .expect(400);
        assert_eq!(r.code(), "VALIDATION_ERROR");
    }
    for body in [
        json!({"name": long(257), "slug": "a"}),
        json!({"name": "n", "slug": "b", "logo": long(2049)}),
        json!({"name": "n", "slug": "c", "metadata": {"blob": long(9000)}}),
    ] {
        let r = h
            .post("/api/auth/organization/create", body, Some(&cookie))
            .await
            .expect(400);
        assert_eq!(r.code(), "VALIDATION_ERROR", "{}", r.text);
    }
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "n", "slug": "d"}),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    let r = h
        .post(
            "/api/auth/organization/create-team",
            json!({"name": long(257), "organizationId": org["id"]}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
    let r = h
        .post(
            "/api/auth/organization/update",
            json!({"data": {"metadata": {"blob": long(9000)}}, "organizationId": org["id"]}),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");

    // Nesting: 32 levels parse, 33 are refused before parsing.
    let nested = |depth: usize| {
        let mut v = json!(1);
        for _ in 0..depth - 1 {
            v = json!([v]);
        }
        json!({"email": "ann@example.com", "password": PW, "x": v})
    };
    h.sign_in_body(nested(32)).await.expect(200);
    let r = h.sign_in_body(nested(33)).await.expect(400);
    assert!(
        r.json()["details"][0].as_str().unwrap().contains("nested"),
        "{}",
        r.text
    );
    let r = h
        .call(
            Method::POST,
            "/api/auth/sign-in/email",
            None,
            None,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(r.status.as_u16(), 400);
}

/// A route asked with another method answers as an unknown route (1.7: 404); POST
/// get-session has its own 405.
#[tokio::test]
async fn another_method_answers_like_an_unknown_route() {
    let h = harness().await;
    let r = h.get("/api/auth/sign-in/email", None).await.expect(404);
    assert_eq!(r.code(), "NOT_FOUND");
    let r = h
        .post("/api/auth/list-sessions", json!({}), None)
        .await
        .expect(404);
    assert_eq!(r.code(), "NOT_FOUND");
    let r = h
        .post("/api/auth/get-session", json!({}), None)
        .await
        .expect(405);
    assert_eq!(r.code(), "METHOD_NOT_ALLOWED_DEFER_SESSION_REQUIRED");
}
