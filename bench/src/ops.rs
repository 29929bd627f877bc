//! One operation of each scenario (sign-in, get-session, an organization round…).
use super::*;

/// One operation of the scenario by virtual user `u`.
pub(crate) async fn op(
    t: &Target,
    scenario: Scenario,
    u: &mut VUser,
    step: u64,
    password: &str,
) -> Result<(), String> {
    match scenario {
        Scenario::SignUp => t.sign_up(&t.next_email(), password).await.map(|_| ()),
        Scenario::SignIn => sign_in(t, u, password).await,
        Scenario::GetSession => get_session(t, u, false).await,
        Scenario::GetSessionNoCache => get_session(t, u, true).await,
        Scenario::Mixed => match step % 20 {
            0 => sign_in(t, u, password).await,
            1 => t.sign_up(&t.next_email(), password).await.map(|_| ()),
            2 => t
                .send(false, "/list-sessions", None, Some(&u.cookie))
                .await
                .map(|_| ()),
            3 => {
                // Sign out, then back in, so the user keeps a session.
                t.send(true, "/sign-out", None, Some(&u.cookie)).await?;
                sign_in(t, u, password).await
            }
            _ => get_session(t, u, false).await,
        },
        Scenario::Org => org_round(t, u, step, password).await,
        Scenario::SignInTwoFactor => sign_in_two_factor(t, u, password).await,
        Scenario::OrgRead => {
            let (org, _) = u.org.as_ref().ok_or("no organization")?;
            let path = match step % 2 {
                0 => format!("/organization/get-full-organization?organizationId={org}"),
                _ => format!("/organization/list-members?organizationId={org}"),
            };
            t.send(false, &path, None, Some(&u.cookie))
                .await
                .map(|_| ())
        }
        Scenario::OrgWrite => {
            let (org, member) = u.org.as_ref().ok_or("no organization")?;
            let role = if step.is_multiple_of(2) {
                "admin"
            } else {
                "member"
            };
            t.send(
                true,
                "/organization/update-member-role",
                Some(json!({"organizationId": org, "memberId": member, "role": role})),
                Some(&u.cookie),
            )
            .await
            .map(|_| ())
        }
        Scenario::Ok => t.send(false, "/ok", None, None).await.map(|_| ()),
        Scenario::ApiKey => {
            let key = u.api_key.as_deref().ok_or("no API key")?;
            let (body, _) = t
                .send_with(false, "/get-session", None, &[("x-api-key", key)])
                .await?;
            if body.is_null() {
                return Err("200 null-session".into());
            }
            Ok(())
        }
    }
}

/// Gives every virtual user an API key without a rate limit (with the server key, which may
/// set that), made from the user's session.
pub(crate) async fn setup_api_keys(t: &Target, server_key: &str) -> Result<(), String> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    let bearer = format!("Bearer {server_key}");
    stream::iter(t.users.iter().cloned())
        .map(|u| {
            let bearer = bearer.clone();
            async move {
                let mut u = u.lock().await;
                let (body, _) = t
                    .send_with(
                        true,
                        "/api-key/create",
                        Some(json!({"name": "bench", "rateLimitEnabled": false})),
                        &[
                            ("cookie", u.cookie.as_str()),
                            ("authorization", bearer.as_str()),
                        ],
                    )
                    .await?;
                let key = body.json()["key"].as_str().map(str::to_owned);
                u.api_key = Some(key.ok_or("create answered no key")?);
                Ok::<(), String>(())
            }
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await
        .map(|_| ())
}

pub(crate) async fn sign_in(t: &Target, u: &mut VUser, password: &str) -> Result<(), String> {
    let (_, cookies) = t
        .send(
            true,
            "/sign-in/email",
            Some(json!({"email": u.email, "password": password})),
            None,
        )
        .await?;
    if !cookies.is_empty() {
        u.cookie = cookies.join("; ");
    }
    Ok(())
}

/// A challenged sign-in and its second step with a backup code (new codes when they ran out).
pub(crate) async fn sign_in_two_factor(
    t: &Target,
    u: &mut VUser,
    password: &str,
) -> Result<(), String> {
    let (body, challenge) = t
        .send(
            true,
            "/sign-in/email",
            Some(json!({"email": u.email, "password": password})),
            None,
        )
        .await?;
    if body.json()["twoFactorRedirect"] != true {
        return Err("200 no-challenge".into());
    }
    let code = u.backup_codes.pop().ok_or("no backup code left")?;
    let (_, cookies) = t
        .send(
            true,
            "/two-factor/verify-backup-code",
            Some(json!({"code": code})),
            Some(&challenge.join("; ")),
        )
        .await?;
    u.cookie = cookies.join("; ");
    if u.backup_codes.is_empty() {
        refill_backup_codes(t, u, password).await?;
    }
    Ok(())
}

async fn refill_backup_codes(t: &Target, u: &mut VUser, password: &str) -> Result<(), String> {
    let (body, _) = t
        .send(
            true,
            "/two-factor/generate-backup-codes",
            Some(json!({"password": password})),
            Some(&u.cookie),
        )
        .await?;
    u.backup_codes = body.json()["backupCodes"]
        .as_array()
        .ok_or("no backup codes")?
        .iter()
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    Ok(())
}

/// Turns two-factor sign-in on for every seeded user (codes by mail: on at once), with a
/// first set of backup codes.
pub(crate) async fn setup_two_factor(t: &Target, password: &str) -> Result<(), String> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    stream::iter(t.users.iter().cloned())
        .map(|u| async move {
            let mut u = u.lock().await;
            let (_, cookies) = t
                .send(
                    true,
                    "/two-factor/enable",
                    Some(json!({"password": password, "method": "otp"})),
                    Some(&u.cookie),
                )
                .await?;
            // Turning it on renewed the session.
            u.cookie = cookies.join("; ");
            refill_backup_codes(t, &mut u, password).await
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await
        .map(|_| ())
}

pub(crate) async fn get_session(t: &Target, u: &VUser, no_cache: bool) -> Result<(), String> {
    let path = if no_cache {
        "/get-session?disableCookieCache=true"
    } else {
        "/get-session"
    };
    let (body, _) = t.send(false, path, None, Some(&u.cookie)).await?;
    if body.is_null() {
        return Err("200 null-session".into());
    }
    Ok(())
}

/// Creates an organization named `slug` owned by the user of `cookie`; answers its id.
pub(crate) async fn create_org(t: &Target, slug: &str, cookie: &str) -> Result<String, String> {
    let (org, _) = t
        .send(
            true,
            "/organization/create",
            Some(json!({"name": slug, "slug": slug})),
            Some(cookie),
        )
        .await?;
    Ok(org.json()["id"].as_str().unwrap_or_default().to_owned())
}

/// Signs up a fresh user, invites them to `org_id` (as the owner of `owner_cookie`), and has
/// them accept; answers the new member's id.
pub(crate) async fn add_guest(
    t: &Target,
    org_id: &str,
    owner_cookie: &str,
    password: &str,
) -> Result<String, String> {
    let guest = t.next_email();
    let guest_cookie = t.sign_up(&guest, password).await?;
    let (inv, _) = t
        .send(
            true,
            "/organization/invite-member",
            Some(json!({"organizationId": org_id, "email": guest, "role": "member"})),
            Some(owner_cookie),
        )
        .await?;
    let (acc, _) = t
        .send(
            true,
            "/organization/accept-invitation",
            Some(json!({"invitationId": inv.json()["id"]})),
            Some(&guest_cookie),
        )
        .await?;
    Ok(acc.json()["member"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Gives each virtual user an organization with `members` members (signed up, invited and
/// accepted through the API), for org-read and org-write.
pub(crate) async fn setup_orgs(t: &Target, members: usize, password: &str) -> Result<(), String> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    stream::iter(t.users.iter().cloned())
        .map(|u| async move {
            let mut u = u.lock().await;
            let slug = format!("o-{}-{}", t.run_id, t.seq.fetch_add(1, Ordering::Relaxed));
            let org_id = create_org(t, &slug, &u.cookie).await?;
            let mut first = None;
            for _ in 0..members.max(1) {
                let member = add_guest(t, &org_id, &u.cookie, password).await?;
                first.get_or_insert(member);
            }
            u.org = Some((org_id, first.ok_or("no member id")?));
            Ok::<(), String>(())
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await
        .map(|_| ())
}

/// Registers, for each virtual user's organization, a webhook endpoint at `url` for its
/// members' events (`--webhook`).
pub(crate) async fn setup_hooks(t: &Target, url: &str) -> Result<(), String> {
    for u in &t.users {
        let u = u.lock().await;
        let (org, _) = u.org.as_ref().ok_or("no organization")?;
        t.send(
            true,
            "/organization/webhook/create",
            Some(json!({"organizationId": org, "url": url, "events": ["member.*"]})),
            Some(&u.cookie),
        )
        .await
        .map_err(|e| {
            format!(
                "{e} (the server must allow the local receiver: GATEHOUSE_WEBHOOKS__ALLOW_HTTP=true \
                 GATEHOUSE_WEBHOOKS__ALLOW_PRIVATE_ADDRESSES=true)"
            )
        })?;
    }
    Ok(())
}

/// A whole organization life: create, invite a fresh user, that user accepts, list members,
/// change the role, remove the member. Counted as one operation.
pub(crate) async fn org_round(
    t: &Target,
    owner: &mut VUser,
    step: u64,
    password: &str,
) -> Result<(), String> {
    let slug = format!(
        "b-{}-{}-{step}",
        t.run_id,
        t.seq.fetch_add(1, Ordering::Relaxed)
    );
    let org_id = create_org(t, &slug, &owner.cookie).await?;
    let member_id = add_guest(t, &org_id, &owner.cookie, password).await?;
    t.send(
        false,
        &format!("/organization/list-members?organizationId={org_id}"),
        None,
        Some(&owner.cookie),
    )
    .await?;
    t.send(
        true,
        "/organization/update-member-role",
        Some(json!({"organizationId": org_id, "memberId": member_id, "role": "admin"})),
        Some(&owner.cookie),
    )
    .await?;
    t.send(
        true,
        "/organization/remove-member",
        Some(json!({"organizationId": org_id, "memberIdOrEmail": member_id})),
        Some(&owner.cookie),
    )
    .await?;
    Ok(())
}
