//! The `excerpt` rule on lists of records (an API's JSON answer on one line): the first record whole and the key
//! of the others; and a record fetched again, of which it keeps the fields that changed.

mod common;

use common::{excerpted, session, stale_shell, under};
use ctxfit_compactor::PolicyFile;
use serde_json::json;

/// A flight search's answer as an airline API writes it: one line of JSON, `n` records.
fn flights(n: usize) -> String {
    let records: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"flight_number": "HAT{i:03}", "origin": "JFK", "destination": "SEA", "status": "available", "prices": {{"economy": {}, "business": {}}}}}"#,
                100 + i,
                300 + i
            )
        })
        .collect();
    format!("[{}]", records.join(", "))
}

#[test]
fn a_long_list_of_records_keeps_the_first_whole_and_the_key_of_the_others() {
    let search = flights(20);
    let call = |name: &'static str, text: String| (name, json!({"origin": "JFK"}), text);
    let out = excerpted(&session(&[
        call("search_direct_flight", search.clone()),
        call("get_user_details", "{}".into()),
    ]));
    let first = &search[..search.find("}}, ").unwrap() + 2];
    let others: Vec<String> = (1..20)
        .map(|i| format!(r#"{{"flight_number": "HAT{i:03}" …}}"#))
        .collect();
    assert_eq!(
        out[0],
        format!(
            "{first}, {}]\n[excerpt of a stale result — of long lists of records, only the first field of 19 later \
             ones (`…` marks what was left out); call search_direct_flight again for the full result]",
            others.join(", ")
        )
    );

    // short results, lists of prose (comments, issue bodies) and a command's JSON stay as they are
    let body = "This comment explains the plan in words. ".repeat(6);
    let comments: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"id": "c{i}", "body": "{body}"}}"#))
        .collect();
    let comments = format!("[{}]", comments.join(", "));
    let kept = [flights(8), comments.clone()];
    assert!(kept[0].len() < 2_000 && kept[1].len() > 2_000);
    for text in kept {
        let out = excerpted(&session(&[
            call("search_direct_flight", text.clone()),
            call("get_user_details", "{}".into()),
        ]));
        assert_eq!(out[0], text);
    }
    let out = excerpted(&stale_shell(
        "curl -s https://api.example.com/flights",
        std::slice::from_ref(&search),
    ));
    assert_eq!(out[0], search, "a command's output is `bash`'s to cut");
}

const FLIGHTS: [&str; 2] = [
    r#"{"origin": "MCO", "destination": "BOS", "flight_number": "HAT028", "date": "2024-05-21", "price": 1859}"#,
    r#"{"origin": "BOS", "destination": "CLT", "flight_number": "HAT277", "date": "2024-05-21", "price": 1679}"#,
];

/// A reservation as an airline API writes it: one line of JSON, its id first.
fn reservation(id: &str, cabin: &str, paid: &[i32]) -> String {
    let payments: Vec<String> = paid
        .iter()
        .map(|a| format!(r#"{{"payment_id": "credit_card_2929732", "amount": {a}}}"#))
        .collect();
    format!(
        r#"{{"reservation_id": "{id}", "user_id": "omar_davis_3817", "origin": "MCO", "destination": "CLT", "flight_type": "one_way", "cabin": "{cabin}", "flights": [{}], "passengers": [{{"first_name": "Omar", "last_name": "Davis", "dob": "1982-10-19"}}], "payment_history": [{}], "created_at": "2024-05-11T08:28:51", "total_baggages": 3, "insurance": "yes"}}"#,
        FLIGHTS.join(", "),
        payments.join(", ")
    )
}

#[test]
fn a_record_fetched_again_keeps_the_fields_that_changed() {
    let call = |name: &'static str, text: String| (name, json!({"reservation_id": "JG7FMM"}), text);
    let before = reservation("JG7FMM", "business", &[7136]);
    let after = reservation("JG7FMM", "economy", &[7136, -6594]);
    let out = excerpted(&session(&[
        call("get_reservation_details", before.clone()),
        call("update_reservation_cabin", after.clone()),
        call("get_user_details", "{}".into()),
    ]));
    // the first is kept whole; of the update's answer, the fields the first shows go, the changed ones stay
    assert_eq!(out[0], before);
    assert_eq!(
        out[1],
        "{\"reservation_id\": \"JG7FMM\", [… 4 fields shown elsewhere in this conversation for this record], \
         \"cabin\": \"economy\", [… 2 fields shown elsewhere in this conversation for this record], \
         \"payment_history\": [{\"payment_id\": \"credit_card_2929732\", \"amount\": 7136}, \
         {\"payment_id\": \"credit_card_2929732\", \"amount\": -6594}], \
         [… 3 fields shown elsewhere in this conversation for this record]}\n\
         [excerpt of a stale result — of a record fetched again; call update_reservation_cabin again for the full \
         result]"
    );
    assert_eq!(
        ctxfit_retain_excerpt::keeps_fields_of(&after, &out[1]),
        Some(true)
    );
    assert_eq!(
        ctxfit_retain_excerpt::keeps_fields_of(&before, &out[1]),
        Some(false)
    );
    assert_eq!(ctxfit_retain_excerpt::keeps_fields_of(&after, &after), None);
    // the profile's to turn off
    let whole = PolicyFile::parse(
        "[profiles.whole]\nextends = \"smart\"\ncache_write_premium = 0\n[[profiles.whole.rules]]\nrule = \"excerpt\"\nparams = { record_fields = false }\n",
        "test.toml",
    )
    .unwrap();
    let conv = session(&[
        call("get_reservation_details", before.clone()),
        call("update_reservation_cabin", after.clone()),
        call("get_user_details", "{}".into()),
    ]);
    assert_eq!(
        under(&conv, &whole, "whole")[..2],
        [before.clone(), after.clone()]
    );

    // another record's fields are not this one's, a record written over several lines is compared line by line,
    // and a field shorter than its marker stays
    let other = reservation("LQ940Q", "business", &[7136]);
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&before).unwrap())
            .unwrap();
    for (first, second) in [
        (before.clone(), other.clone()),
        (pretty.clone(), before.clone()),
    ] {
        let out = excerpted(&session(&[
            call("get_reservation_details", first.clone()),
            call("get_reservation_details", second.clone()),
            call("get_user_details", "{}".into()),
        ]));
        assert_eq!(out[..2], [first, second]);
    }
    let short = r#"{"id": "A1", "cabin": "economy", "insurance": "yes", "note": "a note long enough that the rest counts"}"#;
    let changed = r#"{"id": "A1", "cabin": "business", "insurance": "yes", "note": "a note long enough that the rest counts"}"#;
    let out = excerpted(&session(&[
        call("get_reservation_details", short.into()),
        call("get_reservation_details", changed.into()),
        call("get_user_details", "{}".into()),
    ]));
    assert_eq!(
        out[1], changed,
        "a record too short to spare anything stays whole"
    );
}
