//! A password change is a compare-and-set on the password checked: raced over two processes,
//! one change applies and the others are told their current password is not current.
use super::{pair, Backend};
use futures::future::join_all;
use serde_json::json;

const RACERS: usize = 6;

pub(super) async fn a_password_change_raced_over_two_processes_applies_once(backend: Backend) {
    let trials = match backend {
        Backend::Sqlite => 40,
        Backend::Scylla | Backend::Cluster => 8,
    };
    let Some(p) = pair(backend, &[]) else { return };
    for trial in 0..trials {
        let email = format!("changer{trial}@example.com");
        let (cookie, _) = p.user(&email).await;
        let replies = join_all((0..RACERS).map(|i| {
            let body = json!({
                "currentPassword": "a-good-password",
                "newPassword": format!("new-password-{i}"),
            });
            let cookie = cookie.clone();
            let p = &p;
            async move {
                p.post(p.pick(i), "/change-password", body, Some(&cookie))
                    .await
            }
        }))
        .await;
        let won: Vec<usize> = (0..RACERS).filter(|i| replies[*i].status == 200).collect();
        assert_eq!(
            won.len(),
            1,
            "trial {trial}: {:?}",
            replies.iter().map(|r| &r.body).collect::<Vec<_>>()
        );
        for r in replies.iter().filter(|r| r.status != 200) {
            assert_eq!(
                (r.status, r.code()),
                (400, "INVALID_PASSWORD"),
                "trial {trial}"
            );
        }
        for i in 0..RACERS {
            let r = p
                .post(
                    p.pick(i + 1),
                    "/sign-in/email",
                    json!({"email": email, "password": format!("new-password-{i}")}),
                    None,
                )
                .await;
            let expected = if i == won[0] { 200 } else { 401 };
            assert_eq!(
                r.status, expected,
                "trial {trial}, password {i}: {}",
                r.body
            );
        }
    }
}
