//! The built-in roles: every route × role, the rules on roles, the last owner.

use super::*;

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
