//! Teams, and the refusals in better-auth's codes.

use super::*;

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
