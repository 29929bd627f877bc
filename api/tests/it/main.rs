//! The API's integration tests, one binary with a module per area (linking the whole server
//! once instead of once per file): in-process tests over the real endpoint (`api`, `account`,
//! `organization`), the real binary end to end (`e2e`), and the SMTP transport against a real
//! SMTP server (`smtp`). `common` is the shared harness.
// First: the other modules use its macros.
#[macro_use]
mod common;
mod account;
mod admin;
mod api;
mod api_keys;
mod audit;
mod authenticator;
mod compat;
mod crash;
mod disk_full;
mod e2e;
mod email_change_otp;
mod email_otp;
mod magic_link;
mod mailbox_proof;
mod metrics;
mod migration;
mod oidc;
mod organization;
mod passkeys;
mod permissions;
mod processes;
mod rate_limit;
mod seed;
mod smtp;
mod social;
mod startup;
mod two_factor;
mod ui;
mod webhooks;
