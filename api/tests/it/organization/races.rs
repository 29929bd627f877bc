//! Races and reads: limits and slugs under concurrent requests, reads that follow changes.

use super::*;

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
