//! Every route and every error of the foundation, in-process over the real application.

mod http;
mod input;
mod sessions;
mod sign_up_in;

use crate::common::*;
use chrono::Duration;
use futures::future::join_all;
use gatehouse_api::error::Code;
use poem::http::Method;
use serde_json::json;

const PW: &str = "correct-horse-battery";
