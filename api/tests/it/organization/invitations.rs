//! Invitations: their lifecycle, races, caps, and who may see and accept them.

use super::*;

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
