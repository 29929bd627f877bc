//! `gatehouse seed`: users who can sign in with the seeded password and have their sessions,
//! organizations with their members; a second run with the same prefix is refused.
use crate::common::*;
use gatehouse_api::seed::{seed, Plan};
use serde_json::json;
use storage::Clock;

const PASSWORD: &str = "seed-password-1";

#[tokio::test]
async fn seeded_users_sign_in_and_organizations_have_their_members() {
    let h = harness().await;
    let hash = h.state.hasher.hash(PASSWORD.into()).await.unwrap();
    let plan = Plan {
        users: 30,
        sessions_per_user: 2,
        organizations: 3,
        members_per_organization: 4,
        prefix: "t".into(),
        parallel: 8,
    };
    let done = seed(&h.store, &plan, &hash, h.clock.now()).await.unwrap();
    assert_eq!(
        done.to_string(),
        "30 users, 60 sessions, 3 organizations, 15 members"
    );
    let ann = h.sign_in("t0@seed.example", PASSWORD).await.expect(200);
    let cookie = ann.cookie_header();
    let sessions = h
        .get("/api/auth/list-sessions", Some(&cookie))
        .await
        .expect(200)
        .json();
    assert_eq!(
        sessions.as_array().unwrap().len(),
        3,
        "two seeded, one just made"
    );
    let orgs = h
        .get("/api/auth/organization/list", Some(&cookie))
        .await
        .expect(200)
        .json();
    let orgs = orgs.as_array().unwrap();
    assert_eq!(orgs.len(), 1);
    let full = h
        .get(
            &format!(
                "/api/auth/organization/get-full-organization?organizationId={}",
                orgs[0]["id"].as_str().unwrap()
            ),
            Some(&cookie),
        )
        .await
        .expect(200)
        .json();
    let members = full["members"].as_array().unwrap();
    assert_eq!(members.len(), 5);
    let mut emails: Vec<&str> = members
        .iter()
        .map(|m| m["user"]["email"].as_str().unwrap())
        .collect();
    emails.sort();
    assert_eq!(
        emails,
        [
            "t0@seed.example",
            "t1@seed.example",
            "t2@seed.example",
            "t3@seed.example",
            "t4@seed.example"
        ]
    );
    assert_eq!(members.iter().filter(|m| m["role"] == "owner").count(), 1);
    // The owner can work in it at once: its counters are right (the last owner stays).
    let me = members.iter().find(|m| m["role"] == "owner").unwrap();
    let r = h
        .post(
            "/api/auth/organization/update-member-role",
            json!({"organizationId": full["id"], "memberId": me["id"], "role": "member"}),
            Some(&cookie),
        )
        .await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.text);
    // Again with the same prefix: refused, saying why.
    let again = seed(&h.store, &plan, &hash, h.clock.now())
        .await
        .unwrap_err();
    assert!(again.to_string().contains("another --prefix"), "{again}");
}

#[test]
fn the_cli_seeds_a_store() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_gatehouse"))
            .args([
                "seed",
                "--users",
                "200",
                "--organizations",
                "4",
                "--members",
                "2",
            ])
            .env("GATEHOUSE_DATA_DIR", dir.path())
            .env("GATEHOUSE_PASSWORD__ARGON2_MEMORY_KIB", "1024")
            .env("GATEHOUSE_PASSWORD__ARGON2_ITERATIONS", "1")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let out = run();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("seeded 200 users, 200 sessions, 4 organizations, 12 members"),
        "{said}"
    );
    let out = run();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    // Whichever write came first found its user there (they run side by side).
    assert!(
        said.contains("@seed.example exists already: seed with another --prefix"),
        "{said}"
    );
}
