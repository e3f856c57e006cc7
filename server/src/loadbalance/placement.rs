//! The placement rule: which live broker gets a bundle (Pulsar's least-resource-usage strategy
//! with failure-domain anti-affinity, reduced to its core).
//!
//! 1. A bundle already served by a live broker (in its report) or already placed by this load
//!    manager on a live broker stays there.
//! 2. **Failure domains**: when domains are defined, the bundles of one namespace spread over
//!    them: only brokers of the domains holding the fewest bundles of the bundle's namespace
//!    stay candidates (brokers in no domain form one unnamed domain).
//! 3. **Least loaded**: the candidate with the lowest [`max_resource_usage`], then the fewest
//!    bundles (served plus placed), then the smallest id (so the rule is deterministic).
//!
//! [`max_resource_usage`]: crate::loadbalance::LoadReport::max_resource_usage

use crate::loadbalance::report::LoadReport;
use std::collections::{BTreeMap, HashMap};

/// What placement looks at: the load manager's cache.
pub(crate) struct PlacementView<'a> {
    /// Live brokers by id.
    pub(crate) brokers: &'a BTreeMap<String, LoadReport>,
    /// Broker id to failure domain.
    pub(crate) domains: &'a HashMap<String, String>,
    /// Bundles this load manager placed, to the broker it chose.
    pub(crate) placed: &'a HashMap<String, String>,
}

/// `tenant/namespace` of `tenant/namespace/range`.
pub(crate) fn namespace_of(bundle: &str) -> &str {
    bundle
        .rsplit_once('/')
        .map_or(bundle, |(namespace, _)| namespace)
}

impl PlacementView<'_> {
    /// The broker for `bundle`, `None` when no broker is live.
    pub(crate) fn select(&self, bundle: &str) -> Option<String> {
        if let Some((owner, _)) = self
            .brokers
            .iter()
            .find(|(_, report)| report.bundles.iter().any(|served| served == bundle))
        {
            return Some(owner.clone());
        }
        if let Some(broker) = self.placed.get(bundle) {
            if self.brokers.contains_key(broker) {
                return Some(broker.clone());
            }
        }
        let candidates = self.domain_candidates(namespace_of(bundle));
        candidates
            .into_iter()
            .min_by(|a, b| {
                let (usage_a, usage_b) = (
                    self.brokers[*a].max_resource_usage(),
                    self.brokers[*b].max_resource_usage(),
                );
                usage_a
                    .total_cmp(&usage_b)
                    .then_with(|| self.bundle_count(a).cmp(&self.bundle_count(b)))
                    .then_with(|| a.cmp(b))
            })
            .cloned()
    }

    /// Served plus placed bundles of `broker`.
    fn bundle_count(&self, broker: &str) -> usize {
        let served = self
            .brokers
            .get(broker)
            .map_or(0, |report| report.bundles.len());
        let placed = self
            .placed
            .values()
            .filter(|placed_on| *placed_on == broker)
            .count();
        served + placed
    }

    fn domain_of(&self, broker: &str) -> &str {
        self.domains.get(broker).map_or("", String::as_str)
    }

    /// The live brokers of the domains holding the fewest bundles of `namespace` (all live
    /// brokers when no domain is defined).
    fn domain_candidates(&self, namespace: &str) -> Vec<&String> {
        let live: Vec<&String> = self.brokers.keys().collect();
        if self.domains.is_empty() {
            return live;
        }
        let mut per_domain: HashMap<&str, usize> = HashMap::new();
        for broker in &live {
            per_domain.entry(self.domain_of(broker)).or_insert(0);
        }
        let served = self.brokers.iter().flat_map(|(broker, report)| {
            report
                .bundles
                .iter()
                .map(move |bundle| (broker.as_str(), bundle.as_str()))
        });
        let placed = self
            .placed
            .iter()
            .map(|(bundle, broker)| (broker.as_str(), bundle.as_str()));
        for (broker, bundle) in served.chain(placed) {
            if namespace_of(bundle) == namespace && self.brokers.contains_key(broker) {
                *per_domain.entry(self.domain_of(broker)).or_insert(0) += 1;
            }
        }
        let fewest = per_domain.values().copied().min().unwrap_or(0);
        live.into_iter()
            .filter(|broker| per_domain[self.domain_of(broker)] == fewest)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(usage: f64, bundles: &[&str]) -> LoadReport {
        LoadReport {
            cpu: usage,
            bundles: bundles.iter().map(|bundle| bundle.to_string()).collect(),
            ..LoadReport::default()
        }
    }

    #[test]
    fn the_least_loaded_broker_wins_then_fewest_bundles_then_smallest_id() {
        let brokers = BTreeMap::from([
            ("a".to_owned(), report(0.5, &[])),
            ("b".to_owned(), report(0.2, &["t/x/1"])),
            ("c".to_owned(), report(0.2, &[])),
            ("d".to_owned(), report(0.2, &[])),
        ]);
        let view = PlacementView {
            brokers: &brokers,
            domains: &HashMap::new(),
            placed: &HashMap::new(),
        };
        assert_eq!(view.select("t/ns/0x0_0x1").as_deref(), Some("c"));
    }

    #[test]
    fn a_served_or_placed_bundle_stays_where_it_is() {
        let brokers = BTreeMap::from([
            ("a".to_owned(), report(0.9, &["t/ns/1"])),
            ("b".to_owned(), report(0.1, &[])),
        ]);
        let placed = HashMap::from([("t/ns/2".to_owned(), "a".to_owned())]);
        let view = PlacementView {
            brokers: &brokers,
            domains: &HashMap::new(),
            placed: &placed,
        };
        assert_eq!(view.select("t/ns/1").as_deref(), Some("a"));
        assert_eq!(view.select("t/ns/2").as_deref(), Some("a"));
        assert_eq!(view.select("t/ns/3").as_deref(), Some("b"));
    }

    #[test]
    fn bundles_of_a_namespace_spread_over_failure_domains() {
        let brokers = BTreeMap::from([
            ("a".to_owned(), report(0.1, &["t/ns/1"])),
            ("b".to_owned(), report(0.2, &[])),
            ("c".to_owned(), report(0.9, &[])),
        ]);
        let domains = HashMap::from([
            ("a".to_owned(), "d1".to_owned()),
            ("b".to_owned(), "d1".to_owned()),
            ("c".to_owned(), "d2".to_owned()),
        ]);
        let view = PlacementView {
            brokers: &brokers,
            domains: &domains,
            placed: &HashMap::new(),
        };
        // d1 already holds a bundle of t/ns: the next goes to d2, loaded as it is.
        assert_eq!(view.select("t/ns/2").as_deref(), Some("c"));
        // Another namespace has no bundle anywhere: least loaded.
        assert_eq!(view.select("t/other/1").as_deref(), Some("a"));
    }

    #[test]
    fn no_live_broker_means_no_placement() {
        let view = PlacementView {
            brokers: &BTreeMap::new(),
            domains: &HashMap::new(),
            placed: &HashMap::new(),
        };
        assert_eq!(view.select("t/ns/1"), None);
    }
}
