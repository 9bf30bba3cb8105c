use std::sync::Arc;

use super::*;
use crate::{NewTracker, StoreConfig};

async fn tracker(store: &Store, user: UserId, device: &str) -> TrackerId {
    store
        .create_tracker(NewTracker {
            user_id: user,
            label: format!("Truck {device}"),
            device_id: device.into(),
            model: "fmb920".into(),
            plan_id: None,
            store_period: None,
            time_zone: None,
        })
        .await
        .unwrap()
}

async fn generation(store: &Store) -> i64 {
    sqlx::query_scalar("SELECT value FROM intake_generation WHERE id = 1")
        .fetch_one(&store.pool)
        .await
        .unwrap()
}

fn of(store_tracker: crate::Tracker) -> IntakeTracker {
    IntakeTracker {
        id: store_tracker.id,
        user_id: store_tracker.user_id,
        deleted: store_tracker.deleted,
        blocked: store_tracker.blocked,
        clone_of: store_tracker.clone_of,
    }
}

#[tokio::test]
async fn answers_come_from_memory_until_the_database_changes() {
    let (_dir, store, ann, bob) = crate::zones::tests::store_with_two_users().await;
    let first = tracker(&store, ann, "dev-1").await;
    let second = tracker(&store, bob, "dev-2").await;
    let clone = store.clone_tracker(first, bob, None).await.unwrap();
    let lookup = IntakeLookup::new(100);
    let keys = [
        TrackerKey::Id(first),
        TrackerKey::Id(clone),
        TrackerKey::DeviceId("dev-2".into()),
        TrackerKey::Id(TrackerId(999)),
        TrackerKey::DeviceId("nope".into()),
    ];
    let (answers, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    let expected = async |id| Some(of(store.tracker(id).await.unwrap().unwrap()));
    assert_eq!(answers[&keys[0]], expected(first).await);
    assert_eq!(answers[&keys[1]], expected(clone).await);
    assert_eq!(answers[&keys[1]].unwrap().clone_of, Some(first));
    assert_eq!(answers[&keys[2]], expected(second).await);
    assert_eq!(answers[&keys[3]], None);
    assert_eq!(answers[&keys[4]], None);
    assert_eq!(
        stats,
        LookupStats {
            hits: 0,
            misses: 5,
            queries: 3,
            invalidated: false,
            evicted: 0,
            generation: Some(generation(&store).await),
        },
        "the generation, all the ids, all the device ids"
    );
    assert_eq!(lookup.entries(), 5);

    let (again, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    assert_eq!(again, answers);
    assert_eq!((stats.hits, stats.misses, stats.queries), (5, 0, 1));

    store.set_tracker_blocked(first, true).await.unwrap();
    let (changed, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    assert!(changed[&keys[0]].unwrap().blocked);
    assert!(stats.invalidated);
    assert_eq!((stats.hits, stats.misses), (0, 5));
}

#[tokio::test]
async fn what_a_verdict_reads_moves_the_generation_and_nothing_else_does() {
    let (_dir, store, ann, bob) = crate::zones::tests::store_with_two_users().await;
    let mut last = generation(&store).await;
    let mut moved = async |what: &str, expected: bool| {
        let now = generation(&store).await;
        assert_eq!(now != last, expected, "{what}: {last} -> {now}");
        assert!(now >= last, "{what}: the generation only grows");
        last = now;
    };
    let first = tracker(&store, ann, "dev-1").await;
    moved("a new tracker", true).await;
    store.set_tracker_blocked(first, true).await.unwrap();
    moved("a block", true).await;
    store.set_tracker_blocked(first, false).await.unwrap();
    moved("an unblock", true).await;
    let clone = store.clone_tracker(first, bob, None).await.unwrap();
    moved("a clone", true).await;
    store.corrupt_tracker(clone).await.unwrap();
    moved("a deletion", true).await;
    let dealer = schemas::DealerId(
        sqlx::query_scalar("SELECT dealer_id FROM users WHERE id = $1")
            .bind(ann.0)
            .fetch_one(&store.pool)
            .await
            .unwrap(),
    );
    let plan = store
        .create_plan(crate::NewPlan {
            dealer_id: dealer,
            name: "Other".into(),
            store_period: crate::StorePeriod::Months(1),
            features: Vec::new(),
        })
        .await
        .unwrap();
    moved("a new plan", false).await;
    store.set_tracker_plan(first, plan).await.unwrap();
    moved("another plan", true).await;
    sqlx::query("UPDATE trackers SET label = 'Renamed' WHERE id = $1")
        .bind(first.0)
        .execute(&store.pool)
        .await
        .unwrap();
    moved("a label", false).await;
    store
        .set_tracker_movement(first, 5.0, "states.ignition")
        .await
        .unwrap();
    moved("movement settings", false).await;
    let (token, _) = store.create_ingest_token("t", false).await.unwrap();
    moved("a new token", true).await;
    store.revoke_ingest_token(token).await.unwrap();
    moved("a revocation", true).await;
}

#[tokio::test]
async fn a_change_made_through_another_store_on_the_file_is_seen_next() {
    let (dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let first = tracker(&store, ann, "dev-1").await;
    let (token_id, secret) = store.create_ingest_token("t", false).await.unwrap();
    let lookup = IntakeLookup::new(100);
    let key = TrackerKey::DeviceId("dev-1".into());
    let (answers, _) = lookup.trackers(&store, [key.clone()]).await.unwrap();
    assert!(!answers[&key].unwrap().blocked);
    let (token, _) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert_eq!(token.unwrap().id, token_id);
    let (_, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert_eq!((stats.hits, stats.queries), (1, 1));

    // Another process: its own pool on the same file.
    let other = Store::open(StoreConfig::new(dir.path()), Arc::new(schemas::SystemClock))
        .await
        .unwrap();
    other.set_tracker_blocked(first, true).await.unwrap();
    let (answers, stats) = lookup.trackers(&store, [key.clone()]).await.unwrap();
    assert!(answers[&key].unwrap().blocked);
    assert!(stats.invalidated);
    other.revoke_ingest_token(token_id).await.unwrap();
    let (token, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert_eq!(token, None);
    assert!(stats.invalidated);
    other.corrupt_tracker(first).await.unwrap();
    let (answers, _) = lookup.trackers(&store, [key.clone()]).await.unwrap();
    assert_eq!(answers[&key], None, "a deleted tracker holds no device id");
}

#[tokio::test]
async fn memory_answers_alone_only_at_the_generation_read_and_only_all_of_it() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let first = tracker(&store, ann, "dev-1").await;
    let (_, secret) = store.create_ingest_token("t", false).await.unwrap();
    let lookup = IntakeLookup::new(100);
    let keys = [
        TrackerKey::Id(first),
        TrackerKey::DeviceId("dev-1".into()),
        TrackerKey::Id(TrackerId(999)),
    ];
    let refs = || keys.iter().map(TrackerKeyRef::from);
    let (_, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    let read = stats.generation;
    assert_eq!(read, Some(generation(&store).await));
    assert_eq!(lookup.held_trackers(read, refs()), None, "nothing held yet");
    let (answers, _) = lookup.trackers(&store, keys.clone()).await.unwrap();
    let (held, stats) = lookup.held_trackers(read, refs()).unwrap();
    assert_eq!(
        held,
        keys.iter().map(|key| answers[key]).collect::<Vec<_>>()
    );
    assert_eq!(held[2], None, "no such tracker, held as such");
    assert_eq!((stats.hits, stats.misses, stats.queries), (3, 0, 0));
    let more = [TrackerKeyRef::Id(first), TrackerKeyRef::DeviceId("dev-2")];
    assert_eq!(lookup.held_trackers(read, more), None, "one not held");
    assert_eq!(
        lookup.held_trackers(None, refs()),
        None,
        "no generation read"
    );

    // A change: the cache moves on with the next read of the generation,
    // and a request that read the older one is sent to the store.
    store.set_tracker_blocked(first, true).await.unwrap();
    let (_, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert!(stats.invalidated);
    assert_eq!(lookup.held_trackers(read, refs()), None);
    lookup.trackers(&store, keys.clone()).await.unwrap();
    let (held, _) = lookup.held_trackers(stats.generation, refs()).unwrap();
    assert!(held[0].unwrap().blocked && held[1].unwrap().blocked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn look_ups_racing_changes_never_answer_from_before_a_change() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let id = tracker(&store, ann, "dev-1").await;
    let keys = [TrackerKey::Id(id), TrackerKey::DeviceId("dev-1".into())];
    let lookup = Arc::new(IntakeLookup::new(100));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut racers = Vec::new();
    for _ in 0..4 {
        let (lookup, store, stop, keys) =
            (lookup.clone(), store.clone(), stop.clone(), keys.clone());
        racers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                lookup.trackers(&store, keys.clone()).await.unwrap();
            }
        }));
    }
    for round in 0..60 {
        let blocked = round % 2 == 0;
        store.set_tracker_blocked(id, blocked).await.unwrap();
        let (answers, _) = lookup.trackers(&store, keys.clone()).await.unwrap();
        for key in &keys {
            assert_eq!(
                answers[key].unwrap().blocked,
                blocked,
                "round {round}, {key:?}"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for racer in racers {
        racer.await.unwrap();
    }
}

#[tokio::test]
async fn live_tokens_are_kept_and_unknown_ones_are_not() {
    let (_dir, store, _, _) = crate::zones::tests::store_with_two_users().await;
    let (_, secret) = store.create_ingest_token("t", true).await.unwrap();
    let lookup = IntakeLookup::new(100);
    let unknown = Secret::parse(&"0".repeat(32)).unwrap();
    for _ in 0..2 {
        let (token, stats) = lookup.ingest_token(&store, &unknown).await.unwrap();
        assert_eq!(token, None);
        assert_eq!((stats.hits, stats.misses), (0, 1));
    }
    assert_eq!(lookup.entries(), 0);
    let (token, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert!(token.unwrap().backfill);
    assert_eq!((stats.hits, stats.misses, stats.queries), (0, 1, 2));
    let (cached, stats) = lookup.ingest_token(&store, &secret).await.unwrap();
    assert_eq!(cached, token);
    assert_eq!((stats.hits, stats.misses, stats.queries), (1, 0, 1));
    assert_eq!(lookup.entries(), 1);
}

#[tokio::test]
async fn the_cache_keeps_within_its_bound_and_answers_the_same() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let mut keys = Vec::new();
    for n in 0..10 {
        let id = tracker(&store, ann, &format!("dev-{n}")).await;
        keys.push(if n % 2 == 0 {
            TrackerKey::Id(id)
        } else {
            TrackerKey::DeviceId(format!("dev-{n}"))
        });
    }
    let lookup = IntakeLookup::new(3);
    let (answers, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    assert_eq!(answers.len(), 10);
    assert!(
        answers
            .values()
            .all(|a| a.is_some_and(|t| t.user_id == ann))
    );
    assert!(lookup.entries() <= 3, "{}", lookup.entries());
    assert!(stats.evicted >= 7, "{stats:?}");
    let (again, stats) = lookup.trackers(&store, keys).await.unwrap();
    assert_eq!(again, answers);
    assert_eq!(stats.hits + stats.misses, 10);
    assert!(lookup.entries() <= 3, "{}", lookup.entries());
}

#[tokio::test]
async fn nothing_is_kept_with_a_bound_of_zero() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let id = tracker(&store, ann, "dev-1").await;
    let lookup = IntakeLookup::new(0);
    for _ in 0..2 {
        let (answers, stats) = lookup.trackers(&store, [TrackerKey::Id(id)]).await.unwrap();
        assert_eq!(answers[&TrackerKey::Id(id)].unwrap().id, id);
        assert_eq!((stats.hits, stats.misses, stats.queries), (0, 1, 1));
    }
    assert_eq!(lookup.entries(), 0);
}

#[tokio::test]
async fn many_trackers_cost_one_statement_per_kind_and_chunk() {
    let (_dir, store, ann, _) = crate::zones::tests::store_with_two_users().await;
    let first = tracker(&store, ann, "dev-0").await;
    let count: i64 = 40_000;
    sqlx::query(
        "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
         INSERT INTO trackers (user_id, label, device_id, plan_id, created_at) \
         SELECT t.user_id, 'Bulk', 'bulk-' || n.i, t.plan_id, t.created_at \
         FROM n, trackers t WHERE t.id = $2",
    )
    .bind(count)
    .bind(first.0)
    .execute(&store.pool)
    .await
    .unwrap();
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM trackers WHERE label = 'Bulk'")
        .fetch_all(&store.pool)
        .await
        .unwrap();
    let keys = ids
        .iter()
        .map(|id| TrackerKey::Id(TrackerId(*id)))
        .chain((1..=count).map(|n| TrackerKey::DeviceId(format!("bulk-{n}"))));
    let lookup = IntakeLookup::new(1_000_000);
    let (answers, stats) = lookup.trackers(&store, keys).await.unwrap();
    assert_eq!(answers.len(), 80_000);
    assert!(answers.values().all(Option::is_some));
    assert_eq!(
        stats.queries, 5,
        "the generation, then 40,000 ids and 40,000 device ids in chunks of 32,766"
    );
    assert_eq!(lookup.entries(), 80_000);
}

#[tokio::test]
async fn bulk_reads_use_the_indexes() {
    let (_dir, store, _, _) = crate::zones::tests::store_with_two_users().await;
    let plan = |sql: String| {
        let pool = store.pool.clone();
        async move {
            let rows = sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
                .bind(1_i64)
                .bind(2_i64)
                .fetch_all(&pool)
                .await
                .unwrap();
            rows.iter()
                .map(|r| r.try_get::<String, _>("detail").unwrap())
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let by_id = plan(format!("{SELECT_TRACKERS} WHERE t.id IN ($1, $2)")).await;
    assert!(by_id.contains("INTEGER PRIMARY KEY"), "{by_id}");
    let by_device = plan(format!(
        "{SELECT_TRACKERS} WHERE t.device_id IN ($1, $2) AND t.deleted = FALSE AND t.clone_of IS NULL"
    ))
    .await;
    assert!(by_device.contains("trackers_device"), "{by_device}");
}

#[test]
fn an_answer_read_before_a_change_is_never_kept() {
    let tracker = |id| {
        Some(IntakeTracker {
            id: TrackerId(id),
            user_id: UserId(1),
            deleted: false,
            blocked: false,
            clone_of: None,
        })
    };
    let mut cache = Cache::default();
    assert!(!cache.adopt(5), "the first generation empties nothing");
    cache.offer(5, 10, |c| {
        c.ids.insert(TrackerId(1), tracker(1));
    });
    assert_eq!(cache.len(), 1);
    // A change: the next request reads 6 and empties the cache...
    assert!(cache.adopt(6));
    assert_eq!(cache.len(), 0);
    // ...so what a request that read 5 offers afterwards is refused.
    cache.offer(5, 10, |c| {
        c.ids.insert(TrackerId(2), tracker(2));
    });
    assert_eq!(cache.len(), 0);
    cache.offer(6, 10, |c| {
        c.ids.insert(TrackerId(3), tracker(3));
    });
    assert_eq!(cache.len(), 1);
    // A request that read 5 before the change but looks up after it takes
    // the cache back to 5 (empty): it never sees 6's answers as its own,
    // and the next request at 6 empties what it kept.
    assert!(cache.adopt(5));
    assert_eq!(cache.len(), 0);
    assert!(cache.adopt(6));
}

#[test]
fn a_full_cache_drops_half() {
    let mut cache = Cache::default();
    cache.adopt(1);
    let mut evicted = 0;
    for id in 0..1_000 {
        evicted += cache.offer(1, 100, |c| {
            c.ids.insert(TrackerId(id), None);
        });
        assert!(cache.len() <= 100);
    }
    assert_eq!(evicted + cache.len(), 1_000);
    assert_eq!(cache.offer(1, 0, |c| c.tokens.clear()), 0);
}

#[tokio::test]
async fn warming_reads_live_trackers_once_and_a_change_still_empties_memory() {
    let (_dir, store, ann, bob) = crate::zones::tests::store_with_two_users().await;
    let first = tracker(&store, ann, "dev-1").await;
    let second = tracker(&store, bob, "dev-2").await;
    let gone = tracker(&store, bob, "dev-3").await;
    store.corrupt_tracker(gone).await.unwrap();
    let clone = store.clone_tracker(first, bob, None).await.unwrap();
    let lookup = IntakeLookup::new(100);
    assert_eq!(lookup.warm(&store).await.unwrap(), 2, "live, not clones");
    let keys = [
        TrackerKey::DeviceId("dev-1".into()),
        TrackerKey::DeviceId("dev-2".into()),
        TrackerKey::Id(second),
    ];
    let (answers, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    assert_eq!((stats.hits, stats.misses, stats.queries), (3, 0, 1));
    assert_eq!(
        answers[&keys[0]],
        Some(of(store.tracker(first).await.unwrap().unwrap()))
    );
    // Neither the clone (by id) nor the deleted device was read ahead.
    let others = [TrackerKey::Id(clone), TrackerKey::DeviceId("dev-3".into())];
    let (answers, stats) = lookup.trackers(&store, others.clone()).await.unwrap();
    assert_eq!((stats.hits, stats.misses), (0, 2));
    assert_eq!(answers[&others[1]], None);
    store.set_tracker_blocked(second, true).await.unwrap();
    let (answers, stats) = lookup.trackers(&store, keys.clone()).await.unwrap();
    assert!(stats.invalidated);
    assert!(
        answers[&keys[1]].unwrap().blocked,
        "the block holds at once"
    );
    // A bound of 8 reads at most 2 trackers ahead (a quarter: id and device each).
    assert_eq!(IntakeLookup::new(8).warm(&store).await.unwrap(), 2);
    assert_eq!(IntakeLookup::new(4).warm(&store).await.unwrap(), 1);
    assert_eq!(IntakeLookup::new(0).warm(&store).await.unwrap(), 0);
}
