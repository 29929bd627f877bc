//! Custom roles: from the configuration and made at runtime, and no escalation through them.

use super::*;

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
