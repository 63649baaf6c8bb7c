//! A start's time: retries within the run's budget (`--max-wait`), and no
//! request past the start's deadline (review 45 r45c F1: a start's second
//! run, and a first run's GET, Event and PATCH answered slowly, went past
//! the unit's TimeoutStartSec=; systemd killed it, its journal line lost).

use super::*;
use crate::node::sync::start::{GRACE, deadline, run_until_settled};

/// `answers` with the time for requests spent after `spent_after` are sent.
fn run_until_spent(
    answers: Vec<Result<Response, Failure>>,
    spent_after: usize,
) -> (Outcome, Script) {
    let mut s = Script {
        answers,
        sent: Vec::new(),
        spent_after,
    };
    let out = sync_node(
        &mut s,
        &mut |_| {},
        "n1",
        &desired(),
        &Policy::default(),
        false,
        Duration::from_secs(60),
    );
    (out, s)
}

/// No request is sent once the time is spent, whatever is left to do:
/// exit 75 (systemd starts the service again), the line saying why.
#[test]
fn no_request_is_sent_past_the_deadline() {
    let stale = || ok(200, &node("5", r#""example.com/a":"1""#));
    for (spent_after, sent) in [(0, 0), (1, 1)] {
        let (out, s) = run_until_spent(vec![stale(), ok(200, "{}")], spent_after);
        assert_eq!(s.sent.len(), sent, "{}", out.summary);
        assert_eq!(out.code, EXIT_RETRY_LATER, "{}", out.summary);
        assert!(
            out.summary
                .contains("nothing changed: this start's time for requests is spent"),
            "{}",
            out.summary
        );
    }
    // A write's answer lost, then no time to read again: not "nothing
    // changed".
    let lost = Err(Failure::Unreachable("cut".into()));
    let (out, s) = run_until_spent(vec![stale(), lost], 2);
    assert_eq!((s.sent.len(), out.code), (2, EXIT_RETRY_LATER));
    assert!(
        out.summary.contains("unknown whether the Node changed"),
        "{}",
        out.summary
    );
    let (out, _) = run_until_spent(vec![stale(), ok(200, "{}")], usize::MAX);
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
}

/// The deadline is the start's --max-wait and GRACE; one past what a
/// clock holds is none (no panic).
#[test]
fn the_deadline_is_the_wait_and_its_grace() {
    let now = Instant::now();
    assert_eq!(
        deadline(now, Duration::from_secs(300)),
        Some(now + Duration::from_secs(340))
    );
    assert_eq!(deadline(now, Duration::MAX), None);
    assert!(Duration::from_secs(300) + GRACE + Duration::from_secs(20) <= Duration::from_secs(360));
}

#[test]
fn unreachable_429_5xx_and_404_back_off_within_the_budget() {
    let (out, _, slept) = run_script(
        vec![
            Err(Failure::Unreachable("refused".into())),
            ok(503, ""),
            ok(429, ""),
            ok(404, ""),
            ok(200, &node("5", r#""example.com/a":"2""#)),
        ],
        600,
    );
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
    assert_eq!(slept.len(), 4);
    // Exponential with jitter in [0.5, 1.5).
    for (i, d) in slept.iter().enumerate() {
        let base = f64::from(1u32 << i);
        assert!(
            d.as_secs_f64() >= base * 0.5 && d.as_secs_f64() < base * 1.5,
            "{i}: {d:?}"
        );
    }
    // A budget of 0: one try, then the reason.
    let (out, s, slept) = run_script(vec![Err(Failure::Unreachable("refused".into()))], 0);
    assert_eq!(
        (out.code, s.sent.len(), slept.len()),
        (EXIT_RETRY_LATER, 1, 0)
    );
    assert!(
        out.summary.contains("nothing changed: refused"),
        "{}",
        out.summary
    );
}

/// Review 37 r37c F1: a conflict is retried within the run's budget
/// only; past it the run ends with its line.
#[test]
fn conflicts_are_retried_within_the_budget_only() {
    let d = desired();
    let mut answers = Vec::new();
    for _ in 0..=MAX_CONFLICTS {
        answers.push(ok(200, &node("5", r#""example.com/a":"1""#)));
        answers.push(ok(409, r#"{"kind":"Status","message":"conflict"}"#));
    }
    let (out, s) = run_within(answers, &d, Duration::ZERO);
    let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["GET", "PATCH"], "{}", out.summary);
    assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
    assert!(
        out.summary.contains("refused the patch (409)"),
        "{}",
        out.summary
    );
}

/// Review 46 r46c F1: past the deadline, no derive and no run after the
/// first: exit 75 with a line of its own (systemd starts the service
/// again), whatever the first run's code.
#[test]
fn no_run_or_derive_past_the_deadline() {
    use std::cell::Cell;
    let (runs, derives, printed) = (Cell::new(0), Cell::new(0), Cell::new(Vec::new()));
    let code = run_until_settled(
        || {
            runs.set(runs.get() + 1);
            Outcome {
                code: EXIT_OK,
                derived: Some((desired(), None)),
                ..Default::default()
            }
        },
        || {
            derives.set(derives.get() + 1);
            None
        },
        |o| {
            let mut p = printed.take();
            p.push(o.summary.clone());
            printed.set(p);
        },
        || false,
    );
    let printed = printed.take();
    assert_eq!((code, runs.get(), derives.get()), (EXIT_RETRY_LATER, 1, 0));
    assert!(
        printed[1].contains("this start's time is spent"),
        "{printed:?}"
    );
}
