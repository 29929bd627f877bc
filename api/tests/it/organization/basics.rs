//! An organization's life: creation with its default team, listing, slugs, the active organization and the cookie cache.

use super::*;

#[tokio::test]
async fn a_new_organization_has_a_default_team_its_creator_is_in_and_on() {
    let h = org_harness(100).await;
    let (owner, owner_id) = user(&h, "founder@example.com").await;
    let org = create_org(&h, &owner, "defaults").await;
    // Create and update answer the metadata object; the routes that read it back, the
    // stored text (as 1.7).
    assert_eq!(org["metadata"], json!({"plan": "pro"}));
    let org_id = org["id"].as_str().unwrap().to_owned();
    let teams = h
        .get("/api/auth/organization/list-teams", Some(&owner))
        .await
        .expect(200)
        .json();
    assert_eq!(teams.as_array().unwrap().len(), 1, "{teams}");
    assert_eq!(teams[0]["name"], "Org defaults");
    let team_id = teams[0]["id"].as_str().unwrap().to_owned();
    let session = h.session(&owner).await;
    assert_eq!(session["session"]["activeOrganizationId"], org_id.as_str());
    assert_eq!(session["session"]["activeTeamId"], team_id.as_str());
    let in_team = h
        .get(
            &format!("/api/auth/organization/list-team-members?teamId={team_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(in_team[0]["userId"], owner_id.as_str(), "{in_team}");
    let stored = json!("{\"plan\":\"pro\"}");
    let list = h
        .get("/api/auth/organization/list", Some(&owner))
        .await
        .expect(200)
        .json();
    assert_eq!(list[0]["metadata"], stored);
    let full = h
        .get("/api/auth/organization/get-full-organization", Some(&owner))
        .await
        .expect(200)
        .json();
    assert_eq!(full["metadata"], stored);
    assert_eq!(full["teams"][0]["id"], team_id.as_str());
    let active = h
        .post(
            "/api/auth/organization/set-active",
            json!({"organizationId": org_id}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(active["metadata"], stored);
    let updated = h
        .post(
            "/api/auth/organization/update",
            json!({"data": {"metadata": {"plan": "max"}}}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(updated["metadata"], json!({"plan": "max"}));
    let deleted = h
        .post(
            "/api/auth/organization/delete",
            json!({"organizationId": org_id}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(deleted["metadata"], json!("{\"plan\":\"max\"}"));
    // Turned off: no team, no active team.
    let h = harness_with(|c| c.organization.default_team = false).await;
    let (owner, _) = user(&h, "plain@example.com").await;
    create_org(&h, &owner, "plain").await;
    let teams = h
        .get("/api/auth/organization/list-teams", Some(&owner))
        .await
        .expect(200)
        .json();
    assert_eq!(teams, json!([]));
    assert_eq!(
        h.session(&owner).await["session"]["activeTeamId"],
        json!(null)
    );
}

#[tokio::test]
async fn create_list_slug_and_active_organization() {
    let h = org_harness(100).await;
    let (ann, ann_id) = user(&h, "ann@example.com").await;
    let org = create_org(&h, &ann, "acme").await;
    assert_eq!(org["slug"], "acme");
    assert_eq!(org["metadata"], json!({"plan": "pro"}));
    assert_eq!(org["members"][0]["role"], "owner");
    assert_eq!(org["members"][0]["userId"], ann_id.as_str());
    assert_eq!(org["members"][0]["user"]["email"], "ann@example.com");
    let s = h.session(&ann).await;
    assert_eq!(s["session"]["activeOrganizationId"], org["id"]);
    let list = h
        .get("/api/auth/organization/list", Some(&ann))
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);

    let r = h
        .post(
            "/api/auth/organization/check-slug",
            json!({"slug": "acme"}),
            Some(&ann),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "SLUG_IS_TAKEN", "message": "slug is taken"})
    );
    assert_eq!(
        h.post(
            "/api/auth/organization/check-slug",
            json!({"slug": "free"}),
            Some(&ann)
        )
        .await
        .expect(200)
        .json(),
        json!({"status": true})
    );
    let r = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Again", "slug": "acme"}),
            Some(&ann),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "ORGANIZATION_ALREADY_EXISTS", "message": "Organization already exists"})
    );
    h.post(
        "/api/auth/organization/create",
        json!({"name": "Bad", "slug": "Not A Slug"}),
        Some(&ann),
    )
    .await
    .expect(400);
    h.post(
        "/api/auth/organization/create",
        json!({"name": "X", "slug": "x"}),
        None,
    )
    .await
    .expect(401);
    // userId is for server calls only.
    let r = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "X", "slug": "x", "userId": ann_id}),
            Some(&ann),
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "SERVER_CREDENTIAL_REQUIRED");
    let r = h
        .call(
            Method::POST,
            "/api/auth/organization/create",
            Some(json!({"name": "Srv", "slug": "srv", "userId": ann_id})),
            None,
            &[("authorization", &format!("Bearer {KEY}"))],
        )
        .await
        .expect(200);
    assert_eq!(r.json()["members"][0]["userId"], ann_id.as_str());

    // keepCurrentActiveOrganization, then set-active by slug and clear.
    let other = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Two", "slug": "two", "keepCurrentActiveOrganization": true}),
            Some(&ann),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        h.session(&ann).await["session"]["activeOrganizationId"],
        org["id"]
    );
    let r = h
        .post(
            "/api/auth/organization/set-active",
            json!({"organizationSlug": "two"}),
            Some(&ann),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["id"], other["id"]);
    assert_eq!(
        h.session(&ann).await["session"]["activeOrganizationId"],
        other["id"]
    );
    h.post(
        "/api/auth/organization/set-active",
        json!({"organizationId": null}),
        Some(&ann),
    )
    .await
    .expect(200);
    assert_eq!(
        h.session(&ann).await["session"]["activeOrganizationId"],
        Value::Null
    );
    let full = h
        .get("/api/auth/organization/get-full-organization", Some(&ann))
        .await
        .expect(200);
    assert_eq!(full.text, "null");
    let full = h
        .get(
            "/api/auth/organization/get-full-organization?organizationSlug=acme",
            Some(&ann),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(full["members"].as_array().unwrap().len(), 1);
    // Not a member: cannot make it active.
    let (bob, _) = user(&h, "bob@example.com").await;
    let r = h
        .post(
            "/api/auth/organization/set-active",
            json!({"organizationSlug": "acme"}),
            Some(&bob),
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION");
}

#[tokio::test]
async fn organizations_per_user_are_limited_when_configured() {
    let h = harness_with(|c| c.limits.organization_limit = Some(2)).await;
    let (a, _) = user(&h, "a@example.com").await;
    create_org(&h, &a, "one").await;
    create_org(&h, &a, "two").await;
    let r = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Three", "slug": "three"}),
            Some(&a),
        )
        .await
        .expect(403);
    assert_eq!(
        r.code(),
        "YOU_HAVE_REACHED_THE_MAXIMUM_NUMBER_OF_ORGANIZATIONS"
    );
}

#[tokio::test]
async fn deleting_the_active_organization_clears_it() {
    let h = org_harness(100).await;
    let (a, _) = user(&h, "a@example.com").await;
    let org = create_org(&h, &a, "gone").await;
    assert_eq!(
        h.session(&a).await["session"]["activeOrganizationId"],
        org["id"]
    );
    h.post(
        "/api/auth/organization/delete",
        json!({"organizationId": org["id"]}),
        Some(&a),
    )
    .await
    .expect(200);
    assert_eq!(
        h.session(&a).await["session"]["activeOrganizationId"],
        Value::Null
    );
    let r = h
        .post(
            "/api/auth/organization/update",
            json!({"organizationId": org["id"], "data": {"name": "x"}}),
            Some(&a),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ORGANIZATION_NOT_FOUND");
}

#[tokio::test]
async fn active_organization_changes_reach_the_cookie_cache() {
    let h = harness_with(|c| c.session.cookie_cache.enabled = true).await;
    let r = h.sign_up("cache@example.com", PW).await;
    let mut cookie = r.cookie_header();
    let apply = |cookie: &mut String, resp: &Resp| {
        // Replace the cached session with the one the response set.
        if let Some(set) = resp.set_cookie("gatehouse.session_data") {
            let pair = set.split(';').next().unwrap().to_owned();
            *cookie = cookie
                .split("; ")
                .filter(|c| !c.starts_with("gatehouse.session_data="))
                .chain(std::iter::once(pair.as_str()))
                .collect::<Vec<_>>()
                .join("; ");
        }
    };
    let resp = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "A", "slug": "cache-a"}),
            Some(&cookie),
        )
        .await
        .expect(200);
    apply(&mut cookie, &resp);
    let a = resp.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        h.session(&cookie).await["session"]["activeOrganizationId"],
        a.as_str()
    );
    let resp = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "B", "slug": "cache-b", "keepCurrentActiveOrganization": true}),
            Some(&cookie),
        )
        .await
        .expect(200);
    apply(&mut cookie, &resp);
    let b = resp.json()["id"].as_str().unwrap().to_owned();
    let resp = h
        .post(
            "/api/auth/organization/set-active",
            json!({"organizationId": b}),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(
        resp.set_cookie("gatehouse.session_data").is_some(),
        "the cache cookie is re-issued"
    );
    apply(&mut cookie, &resp);
    // Read through the cache (no disableCookieCache): it already shows the new organization.
    assert_eq!(
        h.session(&cookie).await["session"]["activeOrganizationId"],
        b.as_str()
    );
}
