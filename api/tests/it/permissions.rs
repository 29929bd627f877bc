//! What a member may do, read in one answer (`get-member-permissions`, a Gatehouse extension)
//! and by `has-permission`: both from the policy this process holds for the organization's
//! roles version, beside its actor, and both see a role change at once.
use crate::common::*;
use crate::organization::{add_member, create_org, org_harness, user};
use serde_json::{json, Value};

async fn permissions(h: &H, org: &str, cookie: &str) -> Resp {
    h.get(
        &format!("/api/auth/organization/get-member-permissions?organizationId={org}"),
        Some(cookie),
    )
    .await
}

async fn can(h: &H, org: &str, cookie: &str, perms: Value) -> bool {
    h.post(
        "/api/auth/organization/has-permission",
        json!({"organizationId": org, "permissions": perms}),
        Some(cookie),
    )
    .await
    .expect(200)
    .json()["success"]
        == true
}

#[tokio::test]
async fn a_members_permissions_come_in_one_answer_and_follow_role_changes() {
    let h = org_harness(100).await;
    let (owner, _) = user(&h, "owner@example.com").await;
    let org = create_org(&h, &owner, "perms").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = permissions(&h, &org, &owner).await.expect(200).json();
    assert_eq!(r["role"], "owner");
    for (res, act) in [
        ("organization", "delete"),
        ("organization", "update"),
        ("member", "update"),
        ("invitation", "cancel"),
        ("team", "create"),
    ] {
        let acts = r["permissions"][res].as_array().unwrap();
        assert!(acts.contains(&json!(act)), "{res}:{act} in {r}");
    }
    let (member, member_id) = user(&h, "member@example.com").await;
    let m = add_member(&h, &org, &member_id, "member").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = permissions(&h, &org, &member).await.expect(200).json();
    assert_eq!(r["role"], "member");
    assert!(r["permissions"].get("member").is_none(), "{r}");
    assert!(!can(&h, &org, &member, json!({"invitation": ["create"]})).await);
    // A custom role, then the member given it: both reads see it at once.
    h.post(
        "/api/auth/organization/create-role",
        json!({"organizationId": org, "role": "inviter", "permission": {"invitation": ["create"]}}),
        Some(&owner),
    )
    .await
    .expect(200);
    h.post(
        "/api/auth/organization/update-member-role",
        json!({"organizationId": org, "memberId": m, "role": "member,inviter"}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = permissions(&h, &org, &member).await.expect(200).json();
    assert_eq!(r["role"], "member,inviter");
    assert_eq!(r["permissions"]["invitation"], json!(["create"]));
    assert!(can(&h, &org, &member, json!({"invitation": ["create"]})).await);
    // The role's permission revoked: gone from both, with no change of the member.
    h.post(
        "/api/auth/organization/update-role",
        json!({"organizationId": org, "roleName": "inviter", "data": {"permission": {"team": ["create"]}}}),
        Some(&owner),
    )
    .await
    .expect(200);
    let r = permissions(&h, &org, &member).await.expect(200).json();
    assert!(r["permissions"].get("invitation").is_none(), "{r}");
    assert!(!can(&h, &org, &member, json!({"invitation": ["create"]})).await);
    assert!(can(&h, &org, &member, json!({"team": ["create"]})).await);
    // Not a member: refused, as has-permission refuses.
    let (stranger, _) = user(&h, "stranger@example.com").await;
    assert_eq!(permissions(&h, &org, &stranger).await.status.as_u16(), 403);
    h.post(
        "/api/auth/organization/has-permission",
        json!({"organizationId": org, "permissions": {"member": ["create"]}}),
        Some(&stranger),
    )
    .await
    .expect(403);
    // Without a session: 401; without an active organization: its code.
    assert_eq!(
        h.get("/api/auth/organization/get-member-permissions", None)
            .await
            .status
            .as_u16(),
        401
    );
}
