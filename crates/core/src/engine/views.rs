//! What clients see: the snapshot, built from the engine's own state only (no call to
//! a warehouse or the orchestrator), and each incident's view.

use super::*;

impl Engine {
    /// How many incident views were built so far (each costs a policy lookup per
    /// proposal): a change to one incident should build one.
    pub fn views_built(&self) -> u64 {
        self.views_built.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The whole snapshot, its views not counted: what a publish of only the changed
    /// incidents is checked against in debug builds.
    pub fn snapshot_uncounted(&self, finished: bool) -> Snapshot {
        let counted = self.views_built();
        let whole = self.snapshot(finished);
        self.views_built
            .store(counted, std::sync::atomic::Ordering::Relaxed);
        whole
    }

    /// What clients show. Reads only the engine's own state and database: no call to a
    /// warehouse or the orchestrator, so nothing slow outside can delay it.
    pub fn snapshot(&self, finished: bool) -> Snapshot {
        let mut snapshot = self.snapshot_without_incidents(finished);
        snapshot.incidents = self
            .incidents
            .iter()
            .map(|i| self.incident_view(i))
            .collect();
        snapshot
    }

    /// The views of the incidents changed since the last call (all of them after a
    /// reload or at the first call: then `true`), so a publisher builds only those.
    pub fn changed_views(&mut self) -> (bool, Vec<IncidentView>) {
        let changed = self.incidents.take_changed();
        let views = self
            .incidents
            .iter()
            .filter(|i| changed.all || changed.ids.contains(&i.id))
            .map(|i| self.incident_view(i))
            .collect();
        (changed.all, views)
    }

    /// The incidents' ids, in the order a snapshot lists them.
    pub fn incident_ids(&self) -> impl Iterator<Item = &str> {
        self.incidents.iter().map(|i| i.id.as_str())
    }

    /// [`Engine::snapshot`] with no incidents: what is engine-wide.
    pub fn snapshot_without_incidents(&self, finished: bool) -> Snapshot {
        self.engine_wide(finished, self.monitor_views())
    }

    /// [`Engine::snapshot_without_incidents`] for a publisher: the monitors' views are
    /// built again only when an observation or the policy changed or the clock moved
    /// since the last call, so a decision does not cost a view per monitor.
    pub fn changed_engine_wide(&mut self, finished: bool) -> Snapshot {
        let monitors = match &self.latest.shown {
            Some((at, views)) if *at == self.now_time => views.clone(),
            _ => {
                let views = self.monitor_views();
                self.latest.shown = Some((self.now_time, views.clone()));
                views
            }
        };
        #[cfg(debug_assertions)]
        assert_eq!(
            monitors,
            self.monitor_views(),
            "an observation changed without being marked (engine/views.rs, Latest)"
        );
        self.engine_wide(finished, monitors)
    }

    fn engine_wide(&self, finished: bool, monitors: Vec<MonitorView>) -> Snapshot {
        let pipelines = self.pipelines.clone();
        Snapshot {
            now: self.now(),
            actor: self.console_actor.clone(),
            chain_head: chain::head(&*self.state).ok().flatten().map(Into::into),
            pipelines,
            orchestrator_down: self
                .orchestrator_down
                .as_ref()
                .map(|(since, error)| format!("since {}: {error}", short_time(*since))),
            first_poll: self.first_poll,
            monitors,
            poll_costs: self.poll_costs.values().map(edge::poll_cost_view).collect(),
            incidents: Vec::new(),
            notices: self.notices.iter().rev().take(5).rev().cloned().collect(),
            finished,
            chain_alarm: self.chain_alarm.clone(),
            trust_alarm: self.trust_alarm(),
            attached: Vec::new(),
            outbox: self.outbox_view(),
            waves: self.waves_for_console(),
            access: self.access_for_console(),
            org_stop: stop::state(&*self.state)
                .ok()
                .filter(|s| s.active)
                .map(|s| {
                    format!(
                        "ORG STOP since {} by {}{}",
                        s.since.map(short_time).unwrap_or_default(),
                        s.by.unwrap_or_default(),
                        s.lift_requested_by
                            .map(|w| format!("; lift asked by {w}, needs a second person"))
                            .unwrap_or_default()
                    )
                }),
        }
    }

    /// Each monitor's period, by name. Built once per use: a lookup per monitor would
    /// make a thousand monitors cost a million name comparisons.
    pub(super) fn periods(&self) -> BTreeMap<String, TimeDelta> {
        self.config
            .monitor
            .iter()
            .filter_map(|m| {
                let every = crate::config::parse_duration(&m.every).ok()?;
                Some((Config::monitor_name(m), TimeDelta::from_std(every).ok()?))
            })
            .collect()
    }

    /// The latest figure of every check. One that is older than its monitor's latest
    /// poll (the warehouse went down, so the poll measured nothing for it), or overdue
    /// by three periods, is stale: shown with its age and health unknown, never as a
    /// fresh "ok".
    pub(super) fn monitor_views(&self) -> Vec<MonitorView> {
        let mut newest: BTreeMap<&str, Timestamp> = BTreeMap::new();
        for o in self.latest.values() {
            let at = newest.entry(o.monitor.as_str()).or_insert(o.at);
            *at = (*at).max(o.at);
        }
        let periods = self.periods();
        let quiet = &self.latest.quiet;
        let overdue = |o: &Observation| -> bool {
            let at = o.at.naive();
            periods
                .get(&o.monitor)
                .is_some_and(|every| self.now_time - at > *every * 3)
        };
        self.latest
            .values()
            .map(|o| {
                let check = o.check_label();
                let stale = newest.get(o.monitor.as_str()).is_some_and(|n| *n > o.at) || overdue(o);
                if stale {
                    let age = (self.now_time - o.at.naive()).num_minutes().max(0);
                    return MonitorView {
                        name: o.monitor.clone(),
                        table: o.table.clone(),
                        check,
                        verdict: VerdictKind::Unknown,
                        observed: format!(
                            "{} as of {} ({age} min ago)",
                            o.observed_text(),
                            o.at.hour_minute()
                        ),
                        expected: o.expected_text(),
                        health: MonitorHealth::Stale,
                        quiet: quiet.get(&o.monitor).cloned(),
                    };
                }
                MonitorView {
                    name: o.monitor.clone(),
                    table: o.table.clone(),
                    check,
                    verdict: o.verdict.into(),
                    observed: o.observed_text(),
                    expected: o.expected_text(),
                    health: o.health.into(),
                    quiet: quiet.get(&o.monitor).cloned(),
                }
            })
            .collect()
    }

    pub(super) fn incident_view(&self, i: &Incident) -> IncidentView {
        self.views_built
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut view = i.view(&|proposal| {
            self.requests
                .get(proposal)
                .and_then(|r| r.eligible_roles(&self.config).ok())
        });
        // Who may close it by hand, and who may decide each proposal, by account, so a
        // console refuses anyone else up front.
        view.owner_accounts = Some(match crate::approve::domain_for(&self.config, &i.table) {
            Some(domain) => {
                let roles: Vec<String> = domain
                    .owners
                    .iter()
                    .chain(&domain.escalation)
                    .cloned()
                    .collect();
                crate::approve::accounts_holding(&self.config, &roles)
            }
            None => Vec::new(),
        });
        for proposal in &mut view.proposals {
            if let Some(request) = self.requests.get(&proposal.id) {
                proposal.decider_accounts = Some(match request.eligible_roles(&self.config) {
                    Ok(roles) => crate::approve::accounts_holding(&self.config, &roles),
                    Err(_) => Vec::new(),
                });
            }
        }
        view.latest = self.latest_reading(i);
        view.quiet = self.latest.quiet.get(&i.monitor).cloned();
        view
    }

    /// Reads which monitors are quiet now and marks the incidents of those whose quiet
    /// began, ended or changed since their views last showed it: a snooze set or ended,
    /// a maintenance window opening or closing as the clock moves, a reloaded config.
    /// Incident and monitor views both read what it kept, so a view never reads the
    /// state database.
    pub(super) fn refresh_quiet(&mut self) {
        let quiet = self.quiet_views();
        if quiet == self.latest.quiet {
            return;
        }
        let changed: std::collections::BTreeSet<String> = quiet
            .keys()
            .chain(self.latest.quiet.keys())
            .filter(|monitor| quiet.get(*monitor) != self.latest.quiet.get(*monitor))
            .cloned()
            .collect();
        self.incidents.mark(|i| changed.contains(&i.monitor));
        self.latest.quiet = quiet;
        self.latest.forget_views();
    }
}

impl Incident {
    /// What clients see of it. `deciders` gives the roles that may decide a proposal
    /// now, where the policy is at hand; without it, the proposal's owner.
    pub(super) fn view(&self, deciders: &dyn Fn(&str) -> Option<Vec<String>>) -> IncidentView {
        let i = self;
        IncidentView {
            id: i.id.clone(),
            // The cause in a sentence; an incident stored before causes had one keeps
            // the words of its first breach.
            title: if !i.diagnosis.headline.is_empty() {
                i.diagnosis.headline.clone()
            } else if i.headline.is_empty() {
                format!(
                    "{} {} {}",
                    i.table,
                    i.check.as_str().replace('_', " "),
                    monitor::thousands(i.observed)
                )
            } else {
                format!("{} {}", i.table, i.headline)
            },
            table: i.table.clone(),
            monitor: i.monitor.clone(),
            check: match &i.column {
                Some(column) => format!("{}({column})", i.check.as_str()),
                None => i.check.as_str().to_string(),
            },
            status: i.status,
            opened_at: i.opened_at,
            observed: i
                .current
                .clone()
                .unwrap_or_else(|| monitor::thousands(i.observed)),
            expected: i.expected.clone(),
            cause: Some(i.diagnosis.cause.clone()),
            evidence: i.diagnosis.evidence.clone(),
            blast: i.blast.clone(),
            proposals: i
                .proposals
                .iter()
                .map(|p| {
                    let mut view = ProposalView::from(p);
                    if let Some(roles) = deciders(&p.id) {
                        view.deciders = roles;
                    }
                    view
                })
                .collect(),
            checks: i.checks.clone(),
            receipt: i.receipt.clone(),
            run_status: i.run.as_ref().map(|r| match &r.finished {
                Some(record) => RunStatus::parse(&record.status),
                None => RunStatus::Queued,
            }),
            symptoms: i.symptoms.iter().map(symptoms::Symptom::view).collect(),
            latest: None,
            timeline: i.timeline.clone(),
            owner_accounts: None,
            quiet: None,
        }
    }
}

type CheckKey = (String, CheckKind, Option<String>);

/// The latest observation per (monitor, check, column) (null_rate has one per column),
/// with the monitors' views as last built from them: any change lets those go.
#[derive(Default)]
pub(super) struct Latest {
    map: BTreeMap<CheckKey, Observation>,
    /// The views, and the engine's time they were built at (a figure goes stale as
    /// time passes).
    shown: Option<(NaiveDateTime, Vec<MonitorView>)>,
    /// The monitors quiet (snoozed, in a maintenance window) as the views last showed
    /// them: [`Engine::refresh_quiet`] marks an incident whose monitor's changed.
    quiet: BTreeMap<String, QuietView>,
}

impl Latest {
    pub(super) fn insert(&mut self, key: CheckKey, observation: Observation) {
        self.shown = None;
        self.map.insert(key, observation);
    }

    pub(super) fn remove(&mut self, key: &CheckKey) -> Option<Observation> {
        self.shown = None;
        self.map.remove(key)
    }

    pub(super) fn clear(&mut self) {
        self.shown = None;
        self.map.clear();
    }

    /// Something else the views read changed (the policy: each monitor's period).
    pub(super) fn forget_views(&mut self) {
        self.shown = None;
    }
}

impl std::ops::Deref for Latest {
    type Target = BTreeMap<CheckKey, Observation>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}
