//! Organizations and members: authorization for every route × role, the rules, and races.

use crate::common::*;
use futures::future::join_all;
use poem::http::Method;
use serde_json::{json, Value};

const PW: &str = "org-password-1";
const KEY: &str = "server-key-0123456789abcdefghijklmnopqrstuv";

pub(crate) async fn org_harness(limit: u32) -> H {
    harness_with(move |c| org_config(c, limit)).await
}

fn org_config(c: &mut gatehouse_api::config::Config, limit: u32) {
    {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
        c.limits.membership_limit = limit;
        // The matrix sends hundreds of invitations; the daily caps have their own test.
        c.limits.invitations_per_organization_per_day = 0;
        c.limits.invitations_per_inviter_per_day = 0;
        c.organization.roles.insert(
            "recruiter".into(),
            [
                ("member".to_string(), vec!["create".to_string()]),
                ("invitation".to_string(), vec!["create".to_string()]),
            ]
            .into_iter()
            .collect(),
        );
    }
}

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

/// As 1.7 by default: the invitee answers with the invitation's id (which only the mail
/// carries) before verifying the address, but lists invitations only once verified.
#[tokio::test]
async fn by_default_an_unverified_invitee_accepts_with_the_mailed_id() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "host@example.com").await;
    create_org(&h, &owner, "welcome").await;
    let inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "guest@example.com", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let (guest, _) = user(&h, "guest@example.com").await;
    let r = h
        .get("/api/auth/organization/list-user-invitations", Some(&guest))
        .await
        .expect(403);
    assert_eq!(r.code(), "EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION");
    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": inv["id"]}),
            Some(&guest),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["invitation"]["status"], "accepted");
}

/// Signs a user up: (cookie, user id).
pub(crate) async fn user(h: &H, email: &str) -> (String, String) {
    let r = h.sign_up(email, PW).await;
    (
        r.cookie_header(),
        r.json()["user"]["id"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn create_org(h: &H, cookie: &str, slug: &str) -> Value {
    h.post(
        "/api/auth/organization/create",
        json!({"name": format!("Org {slug}"), "slug": slug, "metadata": {"plan": "pro"}}),
        Some(cookie),
    )
    .await
    .expect(200)
    .json()
}

pub(crate) async fn add_member(h: &H, org: &str, user_id: &str, role: &str) -> Value {
    h.call(
        Method::POST,
        "/api/auth/organization/add-member",
        Some(json!({"userId": user_id, "role": role, "organizationId": org})),
        None,
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await
    .expect(200)
    .json()
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

/// The table-driven authorization test: every organization route × {owner, admin, member,
/// custom role, member of another organization, anonymous}.
#[tokio::test]
async fn authorization_matrix() {
    let h = org_harness(1000).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "matrix").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let mut cookies = vec![("owner", owner.clone())];
    for (role, email) in [
        ("admin", "admin@example.com"),
        ("member", "member@example.com"),
        ("recruiter", "rec@example.com"),
    ] {
        let (c, id) = user(&h, email).await;
        add_member(&h, &org_id, &id, role).await;
        cookies.push((role, c));
    }
    let (outsider, _) = user(&h, "out@example.com").await;
    create_org(&h, &outsider, "elsewhere").await;
    cookies.push(("outsider", outsider));
    let who = |name: &str| {
        cookies
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c.clone())
    };

    let roles = [
        "owner",
        "admin",
        "member",
        "recruiter",
        "outsider",
        "anonymous",
    ];
    // Expected status per role, in the order above.
    let table: &[(&str, [u16; 6])] = &[
        ("update", [200, 200, 403, 403, 403, 401]),
        ("list-members", [200, 200, 200, 200, 403, 401]),
        ("get-full-organization", [200, 200, 200, 200, 403, 401]),
        ("get-active-member-role", [200, 200, 200, 200, 403, 401]),
        // Outsiders: as 1.7, 400 MEMBER_NOT_FOUND on update-member-role and remove-member.
        ("update-member-role", [200, 200, 403, 403, 400, 401]),
        // As 1.7: a member without member:delete gets 401 YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER.
        ("remove-member", [200, 200, 401, 401, 400, 401]),
        ("has-permission", [200, 200, 200, 200, 403, 401]),
        // Outsiders: as 1.7, 400 MEMBER_NOT_FOUND on invite/cancel, 400 not-a-member on delete.
        ("invite-member", [200, 200, 403, 200, 400, 401]),
        ("cancel-invitation", [200, 200, 403, 403, 400, 401]),
        ("list-invitations", [200, 200, 200, 200, 403, 401]),
        ("create-team", [200, 200, 403, 403, 403, 401]),
        ("update-team", [200, 200, 403, 403, 403, 401]),
        ("remove-team", [200, 200, 403, 403, 403, 401]),
        ("add-team-member", [200, 200, 403, 403, 403, 401]),
        ("list-teams", [200, 200, 200, 200, 403, 401]),
        // The team's own members list it (as 1.7), and so do those who may manage teams
        // (1.7 refuses them too; the callers here are not in the team).
        ("list-team-members", [200, 200, 400, 400, 403, 401]),
        ("create-role", [200, 200, 403, 403, 403, 401]),
        ("list-roles", [200, 200, 200, 403, 403, 401]), // ac:read: not granted to recruiter
        ("delete-role", [200, 200, 403, 403, 403, 401]),
        ("delete", [200, 403, 403, 403, 400, 401]),
    ];
    let owner_cookie = who("owner");
    let mut n = 0;
    for (route, expected) in table {
        // Owner last for delete, so the organization exists for every other row.
        let order: Vec<usize> = if *route == "delete" {
            vec![1, 2, 3, 4, 5, 0]
        } else {
            (0..6).collect()
        };
        for i in order {
            n += 1;
            let role = roles[i];
            let cookie = if role == "anonymous" { None } else { who(role) };
            let cookie = cookie.as_deref();
            let o = org_id.as_str();
            // Fresh objects to act on, made by the owner (or the server) for every request.
            let (_, tid) = user(&h, &format!("t{n}@example.com")).await;
            let tm = add_member(&h, o, &tid, "member").await;
            let tm_id = tm["id"].as_str().unwrap();
            let team = h
                .post(
                    "/api/auth/organization/create-team",
                    json!({"organizationId": o, "name": format!("team{n}")}),
                    owner_cookie.as_deref(),
                )
                .await
                .expect(200)
                .json();
            let team_id = team["id"].as_str().unwrap();
            let inv = h.post("/api/auth/organization/invite-member", json!({"organizationId": o, "email": format!("inv{n}@example.com"), "role": "member"}), owner_cookie.as_deref()).await.expect(200).json();
            let inv_id = inv["id"].as_str().unwrap();
            h.post("/api/auth/organization/create-role", json!({"organizationId": o, "role": format!("r{n}"), "permission": {"team": ["create"]}}), owner_cookie.as_deref()).await.expect(200);
            let resp = match *route {
                "update" => h.post("/api/auth/organization/update", json!({"organizationId": o, "data": {"name": format!("Renamed {n}")}}), cookie).await,
                "list-members" => h.get(&format!("/api/auth/organization/list-members?organizationId={o}"), cookie).await,
                "get-full-organization" => h.get(&format!("/api/auth/organization/get-full-organization?organizationId={o}"), cookie).await,
                "get-active-member-role" => h.get(&format!("/api/auth/organization/get-active-member-role?organizationId={o}&userId={tid}"), cookie).await,
                "update-member-role" => h.post("/api/auth/organization/update-member-role", json!({"organizationId": o, "memberId": tm_id, "role": "admin"}), cookie).await,
                "remove-member" => h.post("/api/auth/organization/remove-member", json!({"organizationId": o, "memberIdOrEmail": tm_id}), cookie).await,
                "has-permission" => h.post("/api/auth/organization/has-permission", json!({"organizationId": o, "permissions": {"member": ["create"]}}), cookie).await,
                "invite-member" => h.post("/api/auth/organization/invite-member", json!({"organizationId": o, "email": format!("x{n}@example.com"), "role": "member"}), cookie).await,
                "cancel-invitation" => h.post("/api/auth/organization/cancel-invitation", json!({"invitationId": inv_id}), cookie).await,
                "list-invitations" => h.get(&format!("/api/auth/organization/list-invitations?organizationId={o}"), cookie).await,
                "create-team" => h.post("/api/auth/organization/create-team", json!({"organizationId": o, "name": format!("new{n}")}), cookie).await,
                "update-team" => h.post("/api/auth/organization/update-team", json!({"organizationId": o, "teamId": team_id, "data": {"name": format!("renamed{n}")}}), cookie).await,
                "remove-team" => h.post("/api/auth/organization/remove-team", json!({"organizationId": o, "teamId": team_id}), cookie).await,
                "add-team-member" => h.post("/api/auth/organization/add-team-member", json!({"organizationId": o, "teamId": team_id, "userId": tid}), cookie).await,
                "list-teams" => h.get(&format!("/api/auth/organization/list-teams?organizationId={o}"), cookie).await,
                "list-team-members" => h.get(&format!("/api/auth/organization/list-team-members?teamId={team_id}"), cookie).await,
                "create-role" => h.post("/api/auth/organization/create-role", json!({"organizationId": o, "role": format!("c{n}"), "permission": {"team": ["create"]}}), cookie).await,
                "list-roles" => h.get(&format!("/api/auth/organization/list-roles?organizationId={o}"), cookie).await,
                "delete-role" => h.post("/api/auth/organization/delete-role", json!({"organizationId": o, "roleName": format!("r{n}")}), cookie).await,
                "delete" => h.post("/api/auth/organization/delete", json!({"organizationId": o}), cookie).await,
                _ => unreachable!(),
            };
            assert_eq!(
                resp.status.as_u16(),
                expected[i],
                "{route} as {role}: {}",
                resp.text
            );
            if matches!(resp.status.as_u16(), 401 | 403)
                && !matches!(role, "outsider" | "anonymous")
            {
                // Each refusal has its own code and message (better-auth's).
                let body = resp.json();
                assert!(
                    body["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("You are not allowed to")
                        && body["code"]
                            .as_str()
                            .unwrap()
                            .starts_with("YOU_ARE_NOT_ALLOWED_TO"),
                    "{route} as {role}: {body}"
                );
            }
            if *route == "has-permission" && resp.status.as_u16() == 200 {
                let granted = resp.json()["success"].as_bool().unwrap();
                assert_eq!(
                    granted,
                    matches!(role, "owner" | "admin" | "recruiter"),
                    "member:create for {role}"
                );
            }
        }
    }
    assert!(h
        .get("/api/auth/organization/list", who("owner").as_deref())
        .await
        .json()
        .as_array()
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn role_rules() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "o@example.com").await;
    let org = create_org(&h, &owner, "rules").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let owner_member = org["members"][0]["id"].as_str().unwrap().to_owned();
    let (admin, admin_id) = user(&h, "a@example.com").await;
    let admin_member = add_member(&h, &org_id, &admin_id, "admin").await;
    let (_, m_id) = user(&h, "m@example.com").await;
    let m = add_member(&h, &org_id, &m_id, "member").await;
    let mid = m["id"].as_str().unwrap();

    // No admin → owner, and an admin cannot touch an owner.
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": org_id, "memberId": mid, "role": "owner"}),
            Some(&admin),
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER");
    // Removing the only owner: as 1.7, that rule answers before the permission does.
    let r = h
        .post(
            "/api/auth/organization/remove-member",
            json!({"organizationId": org_id, "memberIdOrEmail": owner_member}),
            Some(&admin),
        )
        .await
        .expect(400);
    assert_eq!(
        r.code(),
        "YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER"
    );
    // Unknown roles are an error, roles may be lists.
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": org_id, "memberId": mid, "role": "wizard"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_NOT_FOUND");
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": org_id, "memberId": mid, "role": ["member", "recruiter"]}),
            Some(&owner),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["role"], "member,recruiter");
    // The last owner can neither leave, nor be demoted, nor removed.
    let r = h
        .post(
            "/api/auth/organization/leave",
            json!({"organizationId": org_id}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER", "message": "You cannot leave the organization as the only owner"})
    );
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"organizationId": org_id, "memberId": owner_member, "role": "admin"}),
        Some(&owner),
    )
    .await
    .expect(400);
    h.post(
        "/api/auth/organization/remove-member",
        json!({"organizationId": org_id, "memberIdOrEmail": owner_member}),
        Some(&owner),
    )
    .await
    .expect(400);
    // Ids of another organization are not found here.
    let (other, _) = user(&h, "other@example.com").await;
    let other_org = create_org(&h, &other, "other").await;
    let foreign = other_org["members"][0]["id"].as_str().unwrap();
    let r = h
        .post(
            "/api/auth/organization/remove-member",
            json!({"organizationId": org_id, "memberIdOrEmail": foreign}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "MEMBER_NOT_FOUND");
    // By email; a member leaving clears its active organization.
    h.post(
        "/api/auth/organization/remove-member",
        json!({"organizationId": org_id, "memberIdOrEmail": "m@example.com"}),
        Some(&admin),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/set-active",
        json!({"organizationId": org_id}),
        Some(&admin),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/leave",
            json!({"organizationId": org_id}),
            Some(&admin),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["id"], admin_member["id"]);
    assert_eq!(
        h.session(&admin).await["session"]["activeOrganizationId"],
        Value::Null
    );
    let r = h
        .get("/api/auth/organization/get-active-member", Some(&owner))
        .await
        .expect(200);
    assert_eq!(r.json()["role"], "owner");
    // Add-member is server-only.
    h.post(
        "/api/auth/organization/add-member",
        json!({"userId": m_id, "role": "member", "organizationId": org_id}),
        Some(&owner),
    )
    .await
    .expect(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_last_two_owners_removing_each_other_leave_one() {
    for round in 0..10 {
        let h = org_harness(100).await;
        let (a, _) = user(&h, "a@example.com").await;
        let org = create_org(&h, &a, &format!("race{round}")).await;
        let org_id = org["id"].as_str().unwrap().to_owned();
        let a_member = org["members"][0]["id"].as_str().unwrap().to_owned();
        let (b, b_id) = user(&h, "b@example.com").await;
        let b_member = add_member(&h, &org_id, &b_id, "owner").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let tasks = [(a.clone(), b_member.clone()), (b.clone(), a_member.clone())].map(
            |(cookie, target)| {
                let ep = h.ep.clone();
                let org_id = org_id.clone();
                tokio::spawn(async move {
                    call(
                        &ep,
                        Method::POST,
                        "/api/auth/organization/remove-member",
                        Some(json!({"organizationId": org_id, "memberIdOrEmail": target})),
                        Some(&cookie),
                        &[("origin", ORIGIN)],
                    )
                    .await
                    .status
                    .as_u16()
                })
            },
        );
        let statuses: Vec<u16> = join_all(tasks)
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let full = h
            .get(
                &format!("/api/auth/organization/get-full-organization?organizationId={org_id}"),
                Some(&a),
            )
            .await;
        let full = if full.status.as_u16() == 200 {
            full
        } else {
            h.get(
                &format!("/api/auth/organization/get-full-organization?organizationId={org_id}"),
                Some(&b),
            )
            .await
        };
        let owners = full.json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "owner")
            .count();
        assert_eq!(owners, 1, "round {round}: {statuses:?}");
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "round {round}: {statuses:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_joins_stop_at_the_membership_limit() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "crowded").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    // 150 users, created straight in the store (hashing 150 passwords is not the point here).
    let mut ids = Vec::new();
    for i in 0..150 {
        ids.push(store_user(&h, &format!("j{i}@example.com")).await.id.0);
    }
    let tasks = ids.into_iter().map(|id| {
        let ep = h.ep.clone();
        let org_id = org_id.clone();
        tokio::spawn(async move {
            call(
                &ep,
                Method::POST,
                "/api/auth/organization/add-member",
                Some(json!({"userId": id, "role": "member", "organizationId": org_id})),
                None,
                &[("authorization", &format!("Bearer {KEY}"))],
            )
            .await
        })
    });
    let results: Vec<_> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let ok = results.iter().filter(|r| r.status.as_u16() == 200).count();
    let full: Vec<_> = results
        .iter()
        .filter(|r| r.status.as_u16() == 403)
        .collect();
    assert_eq!(ok, 99, "the owner is the 100th member");
    assert_eq!(full.len(), 51);
    assert!(full
        .iter()
        .all(|r| r.code() == "ORGANIZATION_MEMBERSHIP_LIMIT_REACHED"));
    let list = h
        .get(
            &format!("/api/auth/organization/list-members?organizationId={org_id}&limit=500"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(list["total"], 100);
    assert_eq!(list["members"].as_array().unwrap().len(), 100);
    let page = h
        .get(
            &format!(
                "/api/auth/organization/list-members?organizationId={org_id}&limit=10&offset=95"
            ),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(page["members"].as_array().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_creates_of_one_slug_make_one_organization() {
    let h = org_harness(100).await;
    let (a, _) = user(&h, "a@example.com").await;
    let (b, _) = user(&h, "b@example.com").await;
    let tasks = [a.clone(), b.clone()].map(|cookie| {
        let ep = h.ep.clone();
        tokio::spawn(async move {
            call(
                &ep,
                Method::POST,
                "/api/auth/organization/create",
                Some(json!({"name": "Same", "slug": "same"})),
                Some(&cookie),
                &[("origin", ORIGIN)],
            )
            .await
            .status
            .as_u16()
        })
    });
    let mut statuses: Vec<u16> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    statuses.sort();
    assert_eq!(statuses, vec![200, 400]);
}

/// Verifies a user's address by following the mailed link.
/// Verifies the address from the mailed link, followed in the user's own signed-in browser
/// (`cookie`; `None` when the test has no session for them).
async fn verify(h: &H, email: &str, cookie: Option<&str>) {
    h.post(
        "/api/auth/send-verification-email",
        json!({"email": email}),
        None,
    )
    .await
    .expect(200);
    let mail = last_mail(h, "verify-email", email).unwrap();
    h.get(&link_path(h, &mail), cookie).await.expect(302);
}

fn invitation_id(h: &H, to: &str) -> String {
    let mail = last_mail(h, "invitation", to).expect("invitation mail");
    mail["link"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn invitation_lifecycle() {
    let h = harness_with(|c| {
        org_config(c, 100);
        c.organization.require_email_verification_on_invitation = true;
    })
    .await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "inv").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (bob, _) = user(&h, "bob@example.com").await;
    let (carol, _) = user(&h, "carol@example.com").await;

    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "BOB@example.com", "role": "admin"}),
            Some(&owner),
        )
        .await
        .expect(200);
    let inv = r.json();
    assert_eq!(inv["status"], "pending");
    assert_eq!(inv["email"], "bob@example.com");
    let mail = last_mail(&h, "invitation", "bob@example.com").unwrap();
    assert!(mail["subject"].as_str().unwrap().contains("Org inv"));
    assert_eq!(
        mail["link"],
        format!(
            "http://localhost:3000/accept-invitation/{}?email=bob%40example.com",
            inv["id"].as_str().unwrap()
        )
    );
    let id = invitation_id(&h, "bob@example.com");

    // A second invitation for the same address: refused, unless resent.
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "bob@example.com", "role": "admin"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "USER_IS_ALREADY_INVITED_TO_THIS_ORGANIZATION");
    let before = outbox(&h).len();
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "bob@example.com", "role": "admin", "resend": true}),
            Some(&owner),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["id"], inv["id"]);
    assert_eq!(outbox(&h).len(), before + 1);

    // Only the recipient, and only once verified.
    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": id}),
            Some(&bob),
        )
        .await
        .expect(403);
    assert_eq!(
        r.code(),
        "EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION"
    );
    verify(&h, "bob@example.com", Some(&bob)).await;
    verify(&h, "carol@example.com", Some(&carol)).await;
    let r = h
        .get(
            &format!("/api/auth/organization/get-invitation?id={id}"),
            Some(&carol),
        )
        .await
        .expect(403);
    assert_eq!(
        r.json(),
        json!({"code": "YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION", "message": "You are not the recipient of the invitation"})
    );
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": id}),
        Some(&carol),
    )
    .await
    .expect(403);
    let details = h
        .get(
            &format!("/api/auth/organization/get-invitation?id={id}"),
            Some(&bob),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(details["organizationName"], "Org inv");
    assert_eq!(details["organizationSlug"], "inv");
    assert_eq!(details["inviterEmail"], "owner@example.com");
    let mine = h
        .get("/api/auth/organization/list-user-invitations", Some(&bob))
        .await
        .expect(200)
        .json();
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["organizationName"], "Org inv", "as 1.7 lists them");

    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": id}),
            Some(&bob),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["invitation"]["status"], "accepted");
    assert_eq!(r["member"]["role"], "admin");
    assert_eq!(
        h.session(&bob).await["session"]["activeOrganizationId"],
        org_id.as_str()
    );
    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": id}),
            Some(&bob),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "INVITATION_NOT_FOUND", "message": "Invitation not found"})
    );
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "bob@example.com", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION");

    // Carol: rejected; Dan: canceled (by an admin; a plain member may not), then expired.
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "carol@example.com", "role": "member"}),
            Some(&bob),
        )
        .await
        .expect(200);
    let carol_inv = r.json()["id"].as_str().unwrap().to_owned();
    let r = h
        .post(
            "/api/auth/organization/reject-invitation",
            json!({"invitationId": carol_inv}),
            Some(&carol),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["invitation"]["status"], "rejected");
    assert_eq!(r["member"], Value::Null);
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": carol_inv}),
        Some(&carol),
    )
    .await
    .expect(400);

    let dan_inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "dan@example.com", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (member, member_id) = user(&h, "plain@example.com").await;
    add_member(&h, &org_id, &member_id, "member").await;
    let r = h
        .post(
            "/api/auth/organization/cancel-invitation",
            json!({"invitationId": dan_inv}),
            Some(&member),
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_CANCEL_THIS_INVITATION");
    h.post(
        "/api/auth/organization/invite-member",
        json!({"organizationId": org_id, "email": "x@example.com", "role": "member"}),
        Some(&member),
    )
    .await
    .expect(403);
    let r = h
        .post(
            "/api/auth/organization/cancel-invitation",
            json!({"invitationId": dan_inv}),
            Some(&bob),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["status"], "canceled");
    let (dan, _) = user(&h, "dan@example.com").await;
    verify(&h, "dan@example.com", Some(&dan)).await;
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": dan_inv}),
        Some(&dan),
    )
    .await
    .expect(400);

    let eve_inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "eve@example.com", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    user(&h, "eve@example.com").await;
    verify(&h, "eve@example.com", None).await;
    h.clock.advance(chrono::Duration::hours(49));
    let eve = h
        .sign_in("eve@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": eve_inv}),
        Some(&eve),
    )
    .await
    .expect(400);

    // Role rules apply to invitations too; invitations are listed for members only.
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "f@example.com", "role": "owner"}),
            Some(&bob),
        )
        .await
        .expect(403);
    assert_eq!(
        r.code(),
        "YOU_ARE_NOT_ALLOWED_TO_INVITE_USER_WITH_THIS_ROLE"
    );
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "f@example.com", "role": "wizard"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_NOT_FOUND");
    let owner = h
        .sign_in("owner@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    let list = h
        .get(
            &format!("/api/auth/organization/list-invitations?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let statuses: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.contains(&"accepted")
            && statuses.contains(&"rejected")
            && statuses.contains(&"canceled"),
        "{statuses:?}"
    );
    h.get(
        &format!("/api/auth/organization/list-invitations?organizationId={org_id}"),
        Some(&dan),
    )
    .await
    .expect(403);
    let full = h
        .get(
            &format!("/api/auth/organization/get-full-organization?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        full["invitations"].as_array().unwrap().len(),
        statuses.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_accepts_make_one_member() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "accept-race").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (guest, guest_id) = user(&h, "guest@example.com").await;
    verify(&h, "guest@example.com", Some(&guest)).await;
    h.post(
        "/api/auth/organization/invite-member",
        json!({"email": "guest@example.com", "role": "member"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let id = invitation_id(&h, "guest@example.com");
    let tasks = (0..20).map(|_| {
        let ep = h.ep.clone();
        let guest = guest.clone();
        let id = id.clone();
        tokio::spawn(async move {
            call(
                &ep,
                Method::POST,
                "/api/auth/organization/accept-invitation",
                Some(json!({"invitationId": id})),
                Some(&guest),
                &[("origin", ORIGIN)],
            )
            .await
            .status
            .as_u16()
        })
    });
    let statuses: Vec<u16> = join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 400),
        "{statuses:?}"
    );
    let members = h
        .get(
            &format!("/api/auth/organization/list-members?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(members["total"], 2);
    assert_eq!(
        members["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["userId"] == guest_id.as_str())
            .count(),
        1
    );
}

#[tokio::test]
async fn a_custom_role_with_invite_rights_can_invite_but_not_delete() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "custom").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (rec, rec_id) = user(&h, "rec@example.com").await;
    add_member(&h, &org_id, &rec_id, "recruiter").await;
    h.post(
        "/api/auth/organization/invite-member",
        json!({"organizationId": org_id, "email": "new@example.com", "role": "member"}),
        Some(&rec),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/delete",
            json!({"organizationId": org_id}),
            Some(&rec),
        )
        .await
        .expect(403);
    assert_eq!(
        r.json()["message"],
        "You are not allowed to delete this organization"
    );
    let r = h.post("/api/auth/organization/has-permission", json!({"organizationId": org_id, "permissions": {"invitation": ["create"], "member": ["create"]}}), Some(&rec)).await.expect(200);
    assert_eq!(r.json(), json!({"success": true, "error": null}));
    let r = h
        .post(
            "/api/auth/organization/has-permission",
            json!({"organizationId": org_id, "permissions": {"organization": ["delete"]}}),
            Some(&rec),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["success"], false);
    let r = h
        .post(
            "/api/auth/organization/has-permission",
            json!({"organizationId": org_id, "permissions": {"spaceship": ["fly"]}}),
            Some(&rec),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "VALIDATION_ERROR");
}

#[tokio::test]
async fn teams() {
    // Teams from an empty start: no default team here (it has its own test).
    let h = harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
        c.organization.default_team = false;
    })
    .await;
    let (owner, owner_id) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "teams").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (member, member_id) = user(&h, "member@example.com").await;
    add_member(&h, &org_id, &member_id, "member").await;
    let (_, stranger_id) = user(&h, "stranger@example.com").await;

    let core = h
        .post(
            "/api/auth/organization/create-team",
            json!({"name": "Core"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(core["organizationId"], org_id.as_str());
    let core_id = core["id"].as_str().unwrap().to_owned();
    let r = h
        .post(
            "/api/auth/organization/create-team",
            json!({"name": "Core"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TEAM_ALREADY_EXISTS");
    h.post(
        "/api/auth/organization/create-team",
        json!({"name": ""}),
        Some(&owner),
    )
    .await
    .expect(400);
    let r = h
        .post(
            "/api/auth/organization/create-team",
            json!({"organizationId": org_id, "name": "Nope"}),
            Some(&member),
        )
        .await
        .expect(403);
    assert_eq!(
        r.json()["message"],
        "You are not allowed to create teams in this organization"
    );

    let r = h
        .post(
            "/api/auth/organization/update-team",
            json!({"teamId": core_id, "data": {"name": "Platform"}}),
            Some(&owner),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["name"], "Platform");
    h.post(
        "/api/auth/organization/add-team-member",
        json!({"teamId": core_id, "userId": member_id}),
        Some(&owner),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/add-team-member",
        json!({"teamId": core_id, "userId": owner_id}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/add-team-member",
            json!({"teamId": core_id, "userId": stranger_id}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "MEMBER_NOT_FOUND");
    let tm = h
        .get(
            &format!("/api/auth/organization/list-team-members?teamId={core_id}"),
            Some(&member),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(tm.as_array().unwrap().len(), 2);
    let mine = h
        .get("/api/auth/organization/list-user-teams", Some(&member))
        .await
        .expect(200)
        .json();
    assert_eq!(mine[0]["name"], "Platform");
    h.post(
        "/api/auth/organization/set-active",
        json!({"organizationId": org_id}),
        Some(&member),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/set-active-team",
            json!({"teamId": core_id}),
            Some(&member),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["id"], core_id.as_str());
    assert_eq!(
        h.session(&member).await["session"]["activeTeamId"],
        core_id.as_str()
    );
    let full = h
        .get(
            &format!("/api/auth/organization/get-full-organization?organizationId={org_id}"),
            Some(&member),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(full["teams"].as_array().unwrap().len(), 1);

    // A member may leave a team; only team:update removes others.
    h.post(
        "/api/auth/organization/remove-team-member",
        json!({"organizationId": org_id, "teamId": core_id, "userId": owner_id}),
        Some(&member),
    )
    .await
    .expect(403);
    h.post(
        "/api/auth/organization/remove-team-member",
        json!({"organizationId": org_id, "teamId": core_id, "userId": member_id}),
        Some(&member),
    )
    .await
    .expect(200);

    // The last team stays; with two, one can go.
    let r = h
        .post(
            "/api/auth/organization/remove-team",
            json!({"teamId": core_id}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "UNABLE_TO_REMOVE_LAST_TEAM", "message": "Unable to remove last team"})
    );
    h.post(
        "/api/auth/organization/create-team",
        json!({"name": "Second"}),
        Some(&owner),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/remove-team",
        json!({"teamId": core_id}),
        Some(&owner),
    )
    .await
    .expect(200);
    assert_eq!(
        h.get("/api/auth/organization/list-teams", Some(&owner))
            .await
            .expect(200)
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Ids of another organization's team are not found here.
    let (other, _) = user(&h, "other@example.com").await;
    create_org(&h, &other, "other-teams").await;
    let foreign = h
        .post(
            "/api/auth/organization/create-team",
            json!({"name": "Theirs"}),
            Some(&other),
        )
        .await
        .expect(200)
        .json();
    let r = h
        .post(
            "/api/auth/organization/update-team",
            json!({"teamId": foreign["id"], "data": {"name": "Mine"}}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "TEAM_NOT_FOUND");

    // An invitation into a team joins it on acceptance.
    let team2 = h
        .get("/api/auth/organization/list-teams", Some(&owner))
        .await
        .json()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.post(
        "/api/auth/organization/invite-member",
        json!({"email": "joiner@example.com", "role": "member", "teamId": team2}),
        Some(&owner),
    )
    .await
    .expect(200);
    let (joiner, _) = user(&h, "joiner@example.com").await;
    verify(&h, "joiner@example.com", Some(&joiner)).await;
    let id = invitation_id(&h, "joiner@example.com");
    h.post(
        "/api/auth/organization/accept-invitation",
        json!({"invitationId": id}),
        Some(&joiner),
    )
    .await
    .expect(200);
    assert_eq!(
        h.get("/api/auth/organization/list-user-teams", Some(&joiner))
            .await
            .json()[0]["id"],
        team2.as_str()
    );
}

#[tokio::test]
async fn custom_roles_at_runtime() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "roles").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (holder, holder_id) = user(&h, "holder@example.com").await;
    let holder_member = add_member(&h, &org_id, &holder_id, "member").await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = h
        .post(
            "/api/auth/organization/create-role",
            json!({"role": "hiring", "permission": {"member": ["create"]}}),
            Some(&owner),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["success"], true);
    assert_eq!(
        r.json()["roleData"]["permission"],
        json!({"member": ["create"]})
    );
    assert_eq!(r.json()["statements"], json!({"member": ["create"]}));
    h.post(
        "/api/auth/organization/create-role",
        json!({"organizationId": org_id, "role": "x", "permission": {}}),
        Some(&holder),
    )
    .await
    .expect(403);
    let r = h
        .post(
            "/api/auth/organization/create-role",
            json!({"role": "admin", "permission": {}}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_NAME_IS_ALREADY_TAKEN");
    let r = h
        .post(
            "/api/auth/organization/create-role",
            json!({"role": "hiring", "permission": {}}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_NAME_IS_ALREADY_TAKEN");
    h.post(
        "/api/auth/organization/create-role",
        json!({"role": "bad", "permission": {"spaceship": ["fly"]}}),
        Some(&owner),
    )
    .await
    .expect(400);
    h.post(
        "/api/auth/organization/create-role",
        json!({"role": "a,b", "permission": {}}),
        Some(&owner),
    )
    .await
    .expect(400);
    let roles = h
        .get(
            &format!("/api/auth/organization/list-roles?organizationId={org_id}"),
            Some(&holder),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(roles.as_array().unwrap().len(), 1);
    let role = h
        .get(
            &format!("/api/auth/organization/get-role?organizationId={org_id}&roleName=hiring"),
            Some(&holder),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(role["role"], "hiring");

    // Assigned: the holder may add members but not delete the organization.
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"memberId": holder_member, "role": "hiring"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = h.get(&format!("/api/auth/organization/get-active-member-role?organizationId={org_id}&userId={holder_id}"), Some(&owner)).await.expect(200);
    assert_eq!(r.json(), json!({"role": "hiring"}));
    let ok = h
        .post(
            "/api/auth/organization/has-permission",
            json!({"organizationId": org_id, "permissions": {"member": ["create"]}}),
            Some(&holder),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(ok["success"], true);
    h.post(
        "/api/auth/organization/delete",
        json!({"organizationId": org_id}),
        Some(&holder),
    )
    .await
    .expect(403);
    // member:create lets the holder invite (inviting is a way of adding members).
    h.post(
        "/api/auth/organization/invite-member",
        json!({"organizationId": org_id, "email": "i@example.com", "role": "member"}),
        Some(&holder),
    )
    .await
    .expect(200);
    // Updating the role's permissions takes effect at once.
    h.post(
        "/api/auth/organization/update-role",
        json!({"roleName": "hiring", "data": {"permission": {"team": ["create"]}}}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"organizationId": org_id, "email": "j@example.com", "role": "member"}),
            Some(&holder),
        )
        .await
        .expect(403);
    assert_eq!(
        r.json()["message"],
        "You are not allowed to invite users to this organization"
    );
    h.post(
        "/api/auth/organization/create-team",
        json!({"organizationId": org_id, "name": "By holder"}),
        Some(&holder),
    )
    .await
    .expect(200);

    // Deleting a role members hold is refused; once nobody holds it, it goes, and can no
    // longer be assigned.
    let r = h
        .post(
            "/api/auth/organization/delete-role",
            json!({"roleName": "hiring"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_IS_ASSIGNED_TO_MEMBERS");
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"memberId": holder_member, "role": "member"}),
        Some(&owner),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/delete-role",
        json!({"roleName": "hiring"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"memberId": holder_member, "role": "hiring"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ROLE_NOT_FOUND");
    // Custom roles belong to their organization only.
    let (other, _) = user(&h, "other@example.com").await;
    create_org(&h, &other, "other-roles").await;
    h.post(
        "/api/auth/organization/create-role",
        json!({"role": "scoped", "permission": {"team": ["create"]}}),
        Some(&other),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"memberId": holder_member, "role": "scoped"}),
        Some(&owner),
    )
    .await
    .expect(400);
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

/// Attack (issue #8, high): an admin — who may not delete the organization — must not reach
/// `organization:delete` (or anything else beyond their own roles) by creating, updating or
/// assigning a custom role. Only an owner hands out what only owners hold.
#[tokio::test]
async fn custom_roles_cannot_escalate_privileges() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "escalate").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (admin, admin_id) = user(&h, "admin@example.com").await;
    let admin_member = add_member(&h, &org_id, &admin_id, "admin").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, plain_id) = user(&h, "plain@example.com").await;
    let plain_member = add_member(&h, &org_id, &plain_id, "member").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let post = |path: &'static str, mut body: Value, who: String| {
        let h = &h;
        body["organizationId"] = json!(org_id);
        async move {
            h.post(&format!("/api/auth/organization/{path}"), body, Some(&who))
                .await
        }
    };

    // create-role with a permission the admin lacks.
    let r = post(
        "create-role",
        json!({"role": "deleter", "permission": {"organization": ["delete"]}}),
        admin.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE");
    // Within the admin's own permissions it works…
    post(
        "create-role",
        json!({"role": "helper", "permission": {"member": ["create"]}}),
        admin.clone(),
    )
    .await
    .expect(200);
    // …but update-role cannot widen it past them.
    let r = post(
        "update-role",
        json!({"roleName": "helper", "data": {"permission": {"member": ["create"], "organization": ["delete"]}}}),
        admin.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_A_ROLE");

    // The owner may create a stronger role; the admin may neither take it, give it, invite
    // with it, nor edit it.
    post(
        "create-role",
        json!({"role": "deleter", "permission": {"organization": ["delete"]}}),
        owner.clone(),
    )
    .await
    .expect(200);
    for (member, role) in [
        (&admin_member, json!(["admin", "deleter"])),
        (&admin_member, json!("deleter")),
        (&plain_member, json!("deleter")),
        (&plain_member, json!("owner")),
    ] {
        let r = post(
            "update-member-role",
            json!({"memberId": member, "role": role}),
            admin.clone(),
        )
        .await
        .expect(403);
        assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER");
    }
    let r = post(
        "invite-member",
        json!({"email": "new@example.com", "role": "deleter"}),
        admin.clone(),
    )
    .await
    .expect(403);
    assert_eq!(
        r.code(),
        "YOU_ARE_NOT_ALLOWED_TO_INVITE_USER_WITH_THIS_ROLE"
    );
    let r = post(
        "update-role",
        json!({"roleName": "deleter", "data": {"permission": {"member": ["create"]}}}),
        admin.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_A_ROLE");
    let r = post("delete", json!({"organizationId": org_id}), admin.clone())
        .await
        .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION");

    // A member holding a stronger role is out of the admin's reach.
    post(
        "update-member-role",
        json!({"memberId": plain_member, "role": "member,deleter"}),
        owner.clone(),
    )
    .await
    .expect(200);
    let r = post(
        "update-member-role",
        json!({"memberId": plain_member, "role": "member"}),
        admin.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER");
    let r = post(
        "remove-member",
        json!({"memberIdOrEmail": plain_member}),
        admin.clone(),
    )
    .await
    .expect(401);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER");

    // Holding an owner-only permission through a custom role is not owning: such a member
    // cannot pass it on, even with the rights to create roles and change members.
    post(
        "create-role",
        json!({"role": "boss", "permission": {"organization": ["delete"], "member": ["update"], "ac": ["create", "read"]}}),
        owner.clone(),
    )
    .await
    .expect(200);
    let (boss, boss_id) = user(&h, "boss@example.com").await;
    add_member(&h, &org_id, &boss_id, "boss").await;
    let r = post(
        "create-role",
        json!({"role": "deleter2", "permission": {"organization": ["delete"]}}),
        boss.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE");
    let r = post(
        "update-member-role",
        json!({"memberId": admin_member, "role": "deleter"}),
        boss.clone(),
    )
    .await
    .expect(403);
    assert_eq!(r.code(), "YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER");

    // Nothing moved: the admin is still an admin and the organization exists.
    let full = h
        .get(
            &format!("/api/auth/organization/get-full-organization?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let admin_row = full["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == admin_member.as_str())
        .unwrap()
        .clone();
    assert_eq!(admin_row["role"], "admin");
}

/// Role lists are stored parsed: trimmed, without duplicates; empty or unknown entries are
/// refused on every write (update-member-role, invite, add-member).
#[tokio::test]
async fn role_strings_are_normalized_on_every_write() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "normal").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (_, m_id) = user(&h, "m@example.com").await;
    let m = add_member(&h, &org_id, &m_id, " member ").await;
    assert_eq!(m["role"], "member");
    let mid = m["id"].as_str().unwrap().to_owned();
    for (role, stored) in [
        (json!("admin "), "admin"),
        (json!("admin, member,admin"), "admin,member"),
        (json!([" member", "admin", "member"]), "member,admin"),
    ] {
        let r = h
            .post(
                "/api/auth/organization/update-member-role",
                json!({"memberId": mid, "role": role}),
                Some(&owner),
            )
            .await
            .expect(200);
        assert_eq!(r.json()["role"], stored, "{role}");
    }
    for role in [
        json!("member,"),
        json!(""),
        json!(" "),
        json!("admin,,member"),
        json!(["admin", ""]),
        json!("wizard"),
    ] {
        let r = h
            .post(
                "/api/auth/organization/update-member-role",
                json!({"memberId": mid, "role": role}),
                Some(&owner),
            )
            .await
            .expect(400);
        assert_eq!(r.code(), "ROLE_NOT_FOUND", "{role}");
        let r = h
            .post(
                "/api/auth/organization/invite-member",
                json!({"email": "someone@example.com", "role": role}),
                Some(&owner),
            )
            .await
            .expect(400);
        assert_eq!(r.code(), "ROLE_NOT_FOUND", "{role}");
    }
    let r = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"email": "someone@example.com", "role": " owner , owner"}),
            Some(&owner),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["role"], "owner");
}

/// Signs a user up and verifies the address from the mailed link (followed in their own,
/// signed-in browser): their cookie.
async fn verified_user(h: &H, email: &str) -> String {
    let (cookie, _) = user(h, email).await;
    verify(h, email, Some(&cookie)).await;
    cookie
}

/// Attack (issue #8): an invitation grants what its inviter may grant when it is accepted.
/// A removed (or demoted) inviter's invitations no longer make members.
#[tokio::test]
async fn invitations_of_a_removed_or_demoted_inviter_cannot_be_accepted() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "inviters").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (admin, admin_id) = user(&h, "admin@example.com").await;
    let admin_member = add_member(&h, &org_id, &admin_id, "admin").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for to in ["m1@example.com", "m2@example.com"] {
        h.post(
            "/api/auth/organization/invite-member",
            json!({"organizationId": org_id, "email": to, "role": "admin"}),
            Some(&admin),
        )
        .await
        .expect(200);
    }
    let inv1 = invitation_id(&h, "m1@example.com");
    let inv2 = invitation_id(&h, "m2@example.com");

    // Demoted to a plain member: may no longer invite (let alone grant admin).
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"organizationId": org_id, "memberId": admin_member, "role": "member"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let m1 = verified_user(&h, "m1@example.com").await;
    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": inv1}),
            Some(&m1),
        )
        .await
        .expect(400);
    assert_eq!(
        r.code(),
        "INVITER_IS_NO_LONGER_A_MEMBER_OF_THE_ORGANIZATION"
    );

    // Removed altogether.
    h.post(
        "/api/auth/organization/remove-member",
        json!({"organizationId": org_id, "memberIdOrEmail": admin_member}),
        Some(&owner),
    )
    .await
    .expect(200);
    let m2 = verified_user(&h, "m2@example.com").await;
    let r = h
        .post(
            "/api/auth/organization/accept-invitation",
            json!({"invitationId": inv2}),
            Some(&m2),
        )
        .await
        .expect(400);
    assert_eq!(
        r.code(),
        "INVITER_IS_NO_LONGER_A_MEMBER_OF_THE_ORGANIZATION"
    );

    // No member was made; the owner's own invitations still work.
    let members = h
        .get(
            &format!("/api/auth/organization/list-members?organizationId={org_id}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(members["total"], 1);
    h.post(
        "/api/auth/organization/invite-member",
        json!({"organizationId": org_id, "email": "m2@example.com", "role": "member", "resend": true}),
        Some(&owner),
    )
    .await
    .expect(200);
}

/// Invitations are capped per organization and per inviter per day; the HTML mail escapes
/// every user-chosen value and never reads one as a template.
#[tokio::test]
async fn invitations_are_capped_per_day_and_mails_escape_what_users_chose() {
    let h = harness_with(|c| {
        c.server_key = Some(gatehouse_api::config::Secret::new(KEY));
        c.limits.invitations_per_organization_per_day = 3;
        c.limits.invitations_per_inviter_per_day = 2;
    })
    .await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "<img src=x onerror=alert(1)> {{link}}", "slug": "caps"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (admin, admin_id) = user(&h, "admin@example.com").await;
    add_member(&h, &org_id, &admin_id, "admin").await;
    let invite = |who: String, to: &'static str| {
        let h = &h;
        let org_id = org_id.clone();
        async move {
            h.post(
                "/api/auth/organization/invite-member",
                json!({"organizationId": org_id, "email": to, "role": "member"}),
                Some(&who),
            )
            .await
        }
    };
    invite(admin.clone(), "a1@example.com").await.expect(200);
    invite(admin.clone(), "a2@example.com").await.expect(200);
    let r = invite(admin.clone(), "a3@example.com").await.expect(403);
    assert_eq!(r.code(), "INVITATION_LIMIT_REACHED");
    // Resending a pending invitation is not a new one.
    h.post(
        "/api/auth/organization/invite-member",
        json!({"organizationId": org_id, "email": "a1@example.com", "role": "member", "resend": true}),
        Some(&admin),
    )
    .await
    .expect(200);
    invite(owner.clone(), "o1@example.com").await.expect(200);
    let r = invite(owner.clone(), "o2@example.com").await.expect(403);
    assert_eq!(r.code(), "INVITATION_LIMIT_REACHED");
    h.clock.advance(chrono::Duration::hours(25));
    let owner = h
        .sign_in("owner@example.com", PW)
        .await
        .expect(200)
        .cookie_header();
    invite(owner.clone(), "o2@example.com").await.expect(200);

    let mail = last_mail(&h, "invitation", "o2@example.com").unwrap();
    let html = mail["html"].as_str().unwrap();
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt; {{link}}"),
        "{html}"
    );
    assert!(mail["subject"].as_str().unwrap().contains("{{link}}"));
}

/// An account whose address is unverified never sees invitation ids (someone else may have
/// signed up with the address): list-user-invitations refuses it.
#[tokio::test]
async fn invitation_ids_do_not_reach_unverified_accounts() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    create_org(&h, &owner, "proof").await;
    h.post(
        "/api/auth/organization/invite-member",
        json!({"email": "victim@example.com", "role": "admin"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let (mallory, _) = user(&h, "victim@example.com").await;
    let r = h
        .get(
            "/api/auth/organization/list-user-invitations",
            Some(&mallory),
        )
        .await
        .expect(403);
    assert_eq!(r.code(), "EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION");
    // Signed in, the account holder proves the address; then the list is theirs.
    verify(&h, "victim@example.com", Some(&mallory)).await;
    let victim = mallory;
    let list = h
        .get(
            "/api/auth/organization/list-user-invitations",
            Some(&victim),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(list.as_array().unwrap().len(), 1);
}

/// Refusals carry better-auth 1.7's own code for each operation (not one generic FORBIDDEN),
/// and the owner rules their own codes.
#[tokio::test]
async fn refusals_use_better_auths_codes() {
    let h = org_harness(100).await;
    let (owner, owner_id) = user(&h, "own@codes.io").await;
    let (member, member_id) = user(&h, "mem@codes.io").await;
    let org = create_org(&h, &owner, "codes-a").await;
    create_org(&h, &owner, "codes-b").await;
    let o = org["id"].as_str().unwrap();
    add_member(&h, o, &member_id, "member").await;
    let cases = [
        (
            "invite-member",
            json!({"organizationId": o, "email": "x@codes.io", "role": "member"}),
            "YOU_ARE_NOT_ALLOWED_TO_INVITE_USERS_TO_THIS_ORGANIZATION",
        ),
        (
            "update",
            json!({"organizationId": o, "data": {"name": "Z"}}),
            "YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_ORGANIZATION",
        ),
        (
            "delete",
            json!({"organizationId": o}),
            "YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION",
        ),
        (
            "create-team",
            json!({"organizationId": o, "name": "t"}),
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_TEAMS_IN_THIS_ORGANIZATION",
        ),
        (
            "create-role",
            json!({"organizationId": o, "role": "r", "permission": {"team": ["create"]}}),
            "YOU_ARE_NOT_ALLOWED_TO_CREATE_A_ROLE",
        ),
    ];
    for (route, body, code) in cases {
        let r = h
            .post(
                &format!("/api/auth/organization/{route}"),
                body,
                Some(&member),
            )
            .await
            .expect(403);
        assert_eq!(r.code(), code, "{route}");
    }
    // The last owner cannot be demoted; a slug of another organization cannot be taken.
    let members = h
        .get(
            &format!("/api/auth/organization/list-members?organizationId={o}"),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let own = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["userId"] == owner_id.as_str())
        .unwrap()["id"]
        .clone();
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": o, "memberId": own, "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "YOU_CANNOT_LEAVE_THE_ORGANIZATION_WITHOUT_AN_OWNER", "message": "You cannot leave the organization without an owner"})
    );
    let r = h
        .post(
            "/api/auth/organization/update",
            json!({"organizationId": o, "data": {"slug": "codes-b"}}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json(),
        json!({"code": "ORGANIZATION_SLUG_ALREADY_TAKEN", "message": "Organization slug already taken"})
    );
    // Creating with a taken slug keeps its own code.
    let r = h
        .post(
            "/api/auth/organization/create",
            json!({"name": "Again", "slug": "codes-b"}),
            Some(&owner),
        )
        .await
        .expect(400);
    assert_eq!(r.code(), "ORGANIZATION_ALREADY_EXISTS");
    // Non-members, route by route as 1.7 answers them.
    let (outsider, _) = user(&h, "out@codes.io").await;
    let inv = h
        .post(
            "/api/auth/organization/invite-member",
            json!({"organizationId": o, "email": "inv@codes.io", "role": "member"}),
            Some(&owner),
        )
        .await
        .expect(200)
        .json();
    let posts = [
        (
            "invite-member",
            json!({"organizationId": o, "email": "z@codes.io", "role": "member"}),
            400,
            "MEMBER_NOT_FOUND",
        ),
        (
            "cancel-invitation",
            json!({"invitationId": inv["id"]}),
            400,
            "MEMBER_NOT_FOUND",
        ),
        (
            "leave",
            json!({"organizationId": o}),
            400,
            "MEMBER_NOT_FOUND",
        ),
        (
            "delete",
            json!({"organizationId": o}),
            400,
            "USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION",
        ),
        (
            "delete",
            json!({"organizationId": "no-such-org"}),
            400,
            "USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION",
        ),
    ];
    for (route, body, status, code) in posts {
        let r = h
            .post(
                &format!("/api/auth/organization/{route}"),
                body,
                Some(&outsider),
            )
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code.to_owned()),
            "{route}"
        );
    }
    for route in ["list-members", "list-invitations"] {
        let r = h
            .get(
                &format!("/api/auth/organization/{route}?organizationId={o}"),
                Some(&outsider),
            )
            .await
            .expect(403);
        assert_eq!(
            r.json(),
            json!({"code": "YOU_ARE_NOT_A_MEMBER_OF_THIS_ORGANIZATION", "message": "You are not a member of this organization"}),
            "{route}"
        );
    }
    // Canceling twice answers the canceled invitation again; nothing changes.
    for _ in 0..2 {
        let r = h
            .post(
                "/api/auth/organization/cancel-invitation",
                json!({"invitationId": inv["id"]}),
                Some(&owner),
            )
            .await
            .expect(200);
        assert_eq!(r.json()["status"], "canceled");
    }
}

/// The organization view cache never answers what a change made before the question replaced:
/// rounds of one role change raced by readers of the organization (reads that began before the
/// change may end after it and must not fill the cache), then a read — it shows the new role.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_after_a_change_sees_it_while_readers_race_the_change() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "cache-race").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (_, member) = user(&h, "member@example.com").await;
    let member_id = add_member(&h, &org_id, &member, "member").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let full = format!("/api/auth/organization/get-full-organization?organizationId={org_id}");
    let list = format!("/api/auth/organization/list-members?organizationId={org_id}");
    let role_of = |body: &Value| {
        body["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == member_id.as_str())
            .unwrap()["role"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for round in 0..40 {
        let role = if round % 2 == 0 { "admin" } else { "member" };
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..6)
            .map(|i| {
                let ep = h.ep.clone();
                let path = if i % 2 == 0 {
                    full.clone()
                } else {
                    list.clone()
                };
                let owner = owner.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let r = call(&ep, Method::GET, &path, None, Some(&owner), &[]).await;
                        assert_eq!(r.status.as_u16(), 200);
                        // In-process calls that hit the cache never wait: leave the workers
                        // to the actor now and then.
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        tokio::task::yield_now().await;
        h.post(
            "/api/auth/organization/update-member-role",
            json!({"memberId": member_id, "role": role, "organizationId": org_id}),
            Some(&owner),
        )
        .await
        .expect(200);
        for path in [&full, &list] {
            let seen = role_of(&h.get(path, Some(&owner)).await.expect(200).json());
            assert_eq!(seen, role, "round {round}: {path}");
        }
        stop.store(true, Ordering::Relaxed);
        for r in join_all(readers).await {
            r.unwrap();
        }
    }
}

/// Organization reads answered from the view cache are written once per cached organization
/// and query: every window of list-members is its own answer (and the same on every read), the
/// caller's membership is checked on every read, and a change shows at once.
#[tokio::test]
async fn cached_organization_answers_are_per_query_and_follow_changes() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "answers").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let mut ids = vec![];
    for i in 0..4 {
        let (_, u) = user(&h, &format!("m{i}@example.com")).await;
        ids.push(
            add_member(&h, &org_id, &u, "member").await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let full = format!("/api/auth/organization/get-full-organization?organizationId={org_id}");
    let list = |q: &str| format!("/api/auth/organization/list-members?organizationId={org_id}{q}");
    let member_ids = |v: &Value| -> Vec<String> {
        v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    // The ids of a list-members window and the total.
    let window = |q: &'static str| {
        let (path, h, owner) = (list(q), &h, &owner);
        async move {
            let v = h.get(&path, Some(owner)).await.expect(200).json();
            (member_ids(&v), v["total"].as_u64().unwrap())
        }
    };
    // The first read fills the cache; the later ones are answered from it.
    let first = h.get(&full, Some(&owner)).await.expect(200);
    let all = member_ids(&first.json());
    assert_eq!(all.len(), 5);
    assert!(ids.iter().all(|id| all.contains(id)));
    for _ in 0..2 {
        let again = h.get(&full, Some(&owner)).await.expect(200);
        assert_eq!(again.text, first.text);
        assert_eq!(window("").await, (all.clone(), 5));
        assert_eq!(window("&limit=2&offset=1").await, (all[1..3].to_vec(), 5));
        assert_eq!(window("&offset=9").await, (vec![], 5));
    }
    // Somebody else is refused from the cached organization.
    let (stranger, _) = user(&h, "stranger@example.com").await;
    h.get(&full, Some(&stranger)).await.expect(403);
    h.get(&list(""), Some(&stranger)).await.expect(403);
    // A change shows at once in every cached answer.
    h.post(
        "/api/auth/organization/remove-member",
        json!({"memberIdOrEmail": ids[0], "organizationId": org_id}),
        Some(&owner),
    )
    .await
    .expect(200);
    let left: Vec<String> = all.iter().filter(|id| **id != ids[0]).cloned().collect();
    let now = h.get(&full, Some(&owner)).await.expect(200).json();
    assert_eq!(member_ids(&now), left);
    assert_eq!(window("&limit=2&offset=1").await, (left[1..3].to_vec(), 4));
}

/// A member's answer shows its user from the process's user cache: a change of the user made
/// meanwhile (here its name and image) is in the next answer, never the cached one.
#[tokio::test]
async fn member_answers_show_the_users_change_at_once() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "names").await;
    let org_id = org["id"].as_str().unwrap().to_owned();
    let (m_cookie, m_id) = user(&h, "m@example.com").await;
    let member = add_member(&h, &org_id, &m_id, "member").await;
    let mid = member["id"].as_str().unwrap().to_owned();
    let set_role = |role: &'static str| {
        h.post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": org_id, "memberId": mid, "role": role}),
            Some(&owner),
        )
    };
    // Twice: the second answer's user may come from the cache the first filled.
    for role in ["admin", "member"] {
        let r = set_role(role).await.expect(200);
        assert_eq!(r.json()["user"]["email"], "m@example.com");
        assert_eq!(r.json()["user"]["image"], Value::Null);
    }
    h.post(
        "/api/auth/update-user",
        json!({"name": "Renamed", "image": "https://example.com/m.png"}),
        Some(&m_cookie),
    )
    .await
    .expect(200);
    let r = set_role("admin").await.expect(200);
    assert_eq!(r.json()["role"], "admin");
    assert_eq!(r.json()["user"]["name"], "Renamed");
    assert_eq!(r.json()["user"]["image"], "https://example.com/m.png");
}
