//! `LoadReport` and `FailureDomain`: the JSON documents the load manager reads and writes.

use serde::{Deserialize, Serialize};

/// A broker's load, as it publishes it under `/loadbalance/brokers/<id>` (Pulsar's
/// `LocalBrokerData`, reduced to what placement uses).
///
/// Usages are fractions of capacity, 0.0 to 1.0.
///
/// # Examples
///
/// ```
/// use pulsar_server::loadbalance::LoadReport;
///
/// let report = LoadReport { cpu: 0.7, memory: 0.4, ..LoadReport::default() };
/// assert_eq!(report.max_resource_usage(), 0.7);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadReport {
    /// CPU usage.
    pub cpu: f64,
    /// Memory usage.
    pub memory: f64,
    /// Inbound bandwidth usage.
    pub bandwidth_in: f64,
    /// Outbound bandwidth usage.
    pub bandwidth_out: f64,
    /// The bundles the broker serves (`tenant/namespace/0x00000000_0xffffffff`).
    pub bundles: Vec<String>,
}

impl LoadReport {
    /// The highest of the usages: how close the broker is to its first limit (the measure of
    /// Pulsar's resource-usage placement strategies).
    pub fn max_resource_usage(&self) -> f64 {
        [self.cpu, self.memory, self.bandwidth_in, self.bandwidth_out]
            .into_iter()
            .fold(0.0, f64::max)
    }
}

/// The brokers of one failure domain, stored under `/loadbalance/failure-domains/<domain>`
/// (Pulsar's `FailureDomain`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FailureDomain {
    /// The broker ids in the domain.
    pub brokers: Vec<String>,
}
