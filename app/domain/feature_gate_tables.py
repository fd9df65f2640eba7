"""Feature gate names the kubelet knows, per release, and the gates locked to their default.

Data only; ``feature_gates.py`` applies it. Keyed by release string ("1.35" .. "1.38", where
1.38 is upstream master), so a release added to ``kubelet_config.RELEASES`` needs a row here.

Sources (cited, never copied):

* ``SNAPSHOT_1_34``: every gate of the kubelet's feature gate registry as listed by
  kubernetes/kubernetes ``test/compatibility_lifecycle/reference/versioned_feature_list.yaml``
  (generated from pkg/features/kube_features.go plus the component-base logging/metrics gates,
  during the 1.34 cycle), plus component-base's special ``AllAlpha``/``AllBeta`` and the
  client-go gates pkg/features/kube_features.go registers through ``clientfeatures``.
* Gates added later: the spec tables (../shared/spec/podresources.md §4, allocation.md §5)
  and the 1.37 lists of removed and locked gates cited from the 1.37 changelog by
  skyhook-io/radar ``pkg/upgradereadiness/checks_137.go``; gates added during the 1.34 cycle
  after the snapshot are taken from the kubernetes.io feature gate pages. Where only "exists by
  release R" is known, the gate is counted from the earliest plausible release, so a real name
  is not refused (a too-early name is the milder error).
* 1.35-1.37 additions, removals and locks beyond those: a v1.34 -> v1.37 feature-gate delta
  whose stages were checked against ``pkg/features/kube_features.go`` (and the apiserver copy)
  on release-1.37 and CHANGELOG-1.35/1.36/1.37 (third-party study notes, "Kubernetes
  Internals - Appendix: Delta from v1.34 to v1.37"), plus the 1.36 removals the 1.36 release
  notes name (in-tree Portworx, ``UserNamespacesPodSecurityStandards`` with user namespaces
  GA). A gate first seen at Beta is counted from the release before, by the same rule.
* Removals: only removals a source names are applied (CPUManager before 1.34, the 1.35 and
  1.36 removals above, the 1.37 list). A gate removed upstream that no source names stays
  known here: Numascope then accepts a name the kubelet would refuse. Release 1.38 (master)
  has no table of its own: it reads as 1.37.
"""

from __future__ import annotations

from app.domain.releases import RELEASES


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SNAPSHOT_1_34 = _names(
    """
    AggregatedDiscoveryRemoveBetaType AllowDNSOnlyNodeCSR
    AllowInsecureKubeletCertificateSigningRequests AllowOverwriteTerminationGracePeriodSeconds
    AllowParsingUserUIDFromCertAuth AllowServiceLBStatusOnNonLB AllowUnsafeMalformedObjectDeletion
    AnonymousAuthConfigurableEndpoints AnyVolumeDataSource APIResponseCompression
    APIServerIdentity APIServerTracing APIServingWithRoutine AuthorizeNodeWithSelectors
    AuthorizeWithSelectors BtreeWatchCache CBORServingAndStorage
    ClearingNominatedNodeNameAfterBinding CloudControllerManagerWebhook ClusterTrustBundle
    ClusterTrustBundleProjection ComponentFlagz ComponentSLIs ComponentStatusz
    ConcurrentWatchObjectDecode ConsistentListFromCache ContainerCheckpoint ContainerStopSignals
    ContextualLogging CoordinatedLeaderElection CPUCFSQuotaPeriod CPUManagerPolicyAlphaOptions
    CPUManagerPolicyBetaOptions CPUManagerPolicyOptions CRDValidationRatcheting
    CronJobsScheduledAnnotation CrossNamespaceVolumeDataSource CSIMigrationPortworx
    CSIVolumeHealth CustomResourceFieldSelectors DeclarativeValidation
    DeclarativeValidationTakeover DeploymentReplicaSetTerminatingReplicas
    DetectCacheInconsistency DevicePluginCDIDevices DisableAllocatorDualWrite
    DisableCPUQuotaWithExclusiveCPUs DisableNodeKubeProxyVersion DRAAdminAccess DRADeviceTaints
    DRAPartitionableDevices DRAPrioritizedList DRAResourceClaimDeviceStatus
    DRASchedulerFilterTimeout DynamicResourceAllocation EventedPLEG ExecProbeTimeout
    ExternalServiceAccountTokenSigner GitRepoVolumeDriver GracefulNodeShutdown
    GracefulNodeShutdownBasedOnPodPriority HonorPVReclaimPolicy HPAConfigurableTolerance
    HPAScaleToZero ImageMaximumGCAge ImageVolume InPlacePodVerticalScaling
    InPlacePodVerticalScalingAllocatedStatus InPlacePodVerticalScalingExclusiveCPUs
    InTreePluginPortworxUnregister JobBackoffLimitPerIndex JobManagedBy JobPodReplacementPolicy
    JobSuccessPolicy KMSv1 KubeletCgroupDriverFromCRI KubeletCrashLoopBackOffMax
    KubeletEnsureSecretPulledImages KubeletFineGrainedAuthz KubeletInUserNamespace
    KubeletPodResourcesDynamicResources KubeletPodResourcesGet
    KubeletPodResourcesListUseActivePods KubeletPSI KubeletRegistrationGetOnExistsOnly
    KubeletSeparateDiskGC KubeletServiceAccountTokenForCredentialProviders KubeletTracing
    LegacySidecarContainers ListFromCacheSnapshot LoadBalancerIPMode
    LocalStorageCapacityIsolationFSQuotaMonitoring LogarithmicScaleDown LoggingAlphaOptions
    LoggingBetaOptions MatchLabelKeysInPodAffinity MatchLabelKeysInPodTopologySpread
    MatchLabelKeysInPodTopologySpreadSelectorMerge MaxUnavailableStatefulSet MemoryManager
    MemoryQoS MultiCIDRServiceAllocator MutableCSINodeAllocatableCount MutatingAdmissionPolicy
    NFTablesProxyMode NodeInclusionPolicyInPodTopologySpread NodeLogQuery NodeSwap
    NominatedNodeNameForExpectation OpenAPIEnums OrderedNamespaceDeletion
    PodAndContainerStatsFromCRI PodDeletionCost PodIndexLabel PodLevelResources
    PodLifecycleSleepAction PodLifecycleSleepActionAllowZero PodLogsQuerySplitStreams
    PodObservedGenerationTracking PodReadyToStartContainersCondition PodSchedulingReadiness
    PodTopologyLabelsAdmission PortForwardWebsockets PreferSameTrafficDistribution
    PreventStaticPodAPIReferences ProcMountType QOSReserved RecoverVolumeExpansionFailure
    RecursiveReadOnlyMounts ReduceDefaultCrashLoopBackOffDecay RelaxedDNSSearchValidation
    RelaxedEnvironmentVariableValidation RelaxedServiceNameValidation
    ReloadKubeletServerCertificateFile RemoteRequestHeaderUID ResilientWatchCacheInitialization
    ResourceHealthStatus RetryGenerateName RotateKubeletServerCertificate
    RuntimeClassInImageCriAPI SchedulerAsyncAPICalls SchedulerAsyncPreemption
    SchedulerPopFromBackoffQ SchedulerQueueingHints SELinuxChangePolicy SELinuxMount
    SELinuxMountReadWriteOncePod SeparateCacheWatchRPC SeparateTaintEvictionController
    ServiceAccountNodeAudienceRestriction ServiceAccountTokenJTI ServiceAccountTokenNodeBinding
    ServiceAccountTokenNodeBindingValidation ServiceAccountTokenPodNodeInfo
    ServiceTrafficDistribution SidecarContainers SizeBasedListCostEstimate
    SizeMemoryBackedVolumes StatefulSetAutoDeletePVC StorageCapacityScoring
    StorageNamespaceIndex StorageVersionAPI StorageVersionHash StorageVersionMigrator
    StreamingCollectionEncodingToJSON StreamingCollectionEncodingToProtobuf
    StrictCostEnforcementForVAP StrictCostEnforcementForWebhooks StrictIPCIDRValidation
    StructuredAuthenticationConfiguration StructuredAuthenticationConfigurationEgressSelector
    StructuredAuthorizationConfiguration SupplementalGroupsPolicy SystemdWatchdog
    TokenRequestServiceAccountUIDValidation TopologyAwareHints TopologyManagerPolicyAlphaOptions
    TopologyManagerPolicyBetaOptions TopologyManagerPolicyOptions
    TranslateStreamCloseWebsocketRequests UnauthenticatedHTTP2DOSMitigation
    UnknownVersionInteroperabilityProxy UserNamespacesPodSecurityStandards UserNamespacesSupport
    VolumeAttributesClass WatchCacheInitializationPostStartHook
    WatchFromStorageWithoutResourceVersion WatchList WindowsCPUAndMemoryAffinity
    WindowsGracefulNodeShutdown WindowsHostNetwork WinDSR WinOverlay
    AllAlpha AllBeta
    ClientsAllowCBOR ClientsPreferCBOR InformerResourceVersion InOrderInformers WatchListClient
    """
)

# Gates known from a release on, beyond the snapshot (see the module docstring).
ADDED: dict[str, frozenset[str]] = {
    "1.35": _names(
        """
        PodCertificateRequest DRAConsumableCapacity DRAExtendedResource HostnameOverride
        EnvFiles NodeDeclaredFeatures GangScheduling WorkloadAwarePreemption
        InPlacePodVerticalScalingInitContainers InPlacePodLevelResourcesVerticalScaling
        ChangeContainerStatusOnKubeletRestart
        ContainerRestartRules ExtendWebSocketsToKubelet DRADeviceBindingConditions
        OpportunisticBatching VolumeLimitScaling CSIServiceAccountTokenSecrets
        ConstrainedImpersonation DRAResourceClaimGranularStatusAuthorization
        StaleControllerConsistencyJob
        """
    ),
    "1.36": _names(
        """
        PodLevelResourceManagers PLEGOnDemandRelist
        ShardedListAndWatch TopologyAwareWorkloadScheduling DRANodeAllocatableResources
        EtcdRangeStream WatchListCompression StaleControllerConsistencyHPA
        NodeControllerLeaseCircuitBreaker GenericWorkload NFTablesNetlink
        PersistentVolumeClaimUnusedSinceTime ManifestBasedAdmissionControlConfig
        HPAOptimizedSelectorStore
        """
    ),
    "1.37": _names(
        """
        ConsistentListFromCacheSkipTimeoutFallback EvictionRequestAPI
        StatefulSetRecreateStrategy CompositePodGroup SchedulerPreQueueingHints
        InterPodAffinityHostnameFastPath KubeProxyNFTablesLocalhostNodePorts KubeProxyIPVS
        """
    ),
    "1.38": frozenset(),
}

# Gates no longer known from a release on.
REMOVED: dict[str, frozenset[str]] = {
    "1.35": _names(
        """
        StrictCostEnforcementForVAP StrictCostEnforcementForWebhooks
        InPlacePodVerticalScalingAllocatedStatus
        """
    ),
    "1.36": _names(
        """
        CSIMigrationPortworx InTreePluginPortworxUnregister UserNamespacesPodSecurityStandards
        """
    ),
    "1.37": _names(
        """
        AnonymousAuthConfigurableEndpoints APIServerTracing AnyVolumeDataSource
        AuthorizeNodeWithSelectors AuthorizeWithSelectors BtreeWatchCache ConsistentListFromCache
        GangScheduling JobBackoffLimitPerIndex JobPodReplacementPolicy JobSuccessPolicy
        LogarithmicScaleDown OrderedNamespaceDeletion PodLifecycleSleepAction
        PodLifecycleSleepActionAllowZero PreventStaticPodAPIReferences RelaxedDNSSearchValidation
        ResilientWatchCacheInitialization RetryGenerateName SchedulerQueueingHints
        SidecarContainers StreamingCollectionEncodingToJSON StreamingCollectionEncodingToProtobuf
        StructuredAuthenticationConfiguration WorkloadAwarePreemption
        """
    ),
    "1.38": frozenset(),
}

# Gates locked to their default: name -> (locked from release, locked value). The snapshot's
# lockToDefault entries, the spec's GA entries and the 1.37 locked list.
LOCKED: dict[str, tuple[str, bool]] = {
    # The resource managers' own gates.
    "MemoryManager": ("1.32", True),
    "CPUManagerPolicyOptions": ("1.33", True),
    "KubeletPodResourcesGet": ("1.36", True),
    "KubeletPodResourcesDynamicResources": ("1.36", True),
    "KubeletPodResourcesListUseActivePods": ("1.38", True),
    "DisableCPUQuotaWithExclusiveCPUs": ("1.37", True),
    # The rest of the snapshot.
    "AllowServiceLBStatusOnNonLB": ("1.32", False),
    "AnonymousAuthConfigurableEndpoints": ("1.34", True),
    "AnyVolumeDataSource": ("1.33", True),
    "AuthorizeNodeWithSelectors": ("1.34", True),
    "AuthorizeWithSelectors": ("1.34", True),
    "BtreeWatchCache": ("1.33", True),
    "ComponentSLIs": ("1.32", True),
    "ConsistentListFromCache": ("1.34", True),
    "CRDValidationRatcheting": ("1.33", True),
    "CronJobsScheduledAnnotation": ("1.32", True),
    "CSIMigrationPortworx": ("1.33", True),
    "CustomResourceFieldSelectors": ("1.32", True),
    "DevicePluginCDIDevices": ("1.31", True),
    "HonorPVReclaimPolicy": ("1.33", True),
    "JobBackoffLimitPerIndex": ("1.33", True),
    "JobPodReplacementPolicy": ("1.34", True),
    "JobSuccessPolicy": ("1.33", True),
    "KubeletTracing": ("1.34", True),
    "LoadBalancerIPMode": ("1.32", True),
    "LogarithmicScaleDown": ("1.31", True),
    "MatchLabelKeysInPodAffinity": ("1.33", True),
    "MultiCIDRServiceAllocator": ("1.34", True),
    "NFTablesProxyMode": ("1.33", True),
    "NodeInclusionPolicyInPodTopologySpread": ("1.33", True),
    "NodeSwap": ("1.34", True),
    "OrderedNamespaceDeletion": ("1.34", True),
    "PodIndexLabel": ("1.32", True),
    "PodSchedulingReadiness": ("1.30", True),
    "RecoverVolumeExpansionFailure": ("1.34", True),
    "RecursiveReadOnlyMounts": ("1.33", True),
    "RelaxedDNSSearchValidation": ("1.34", True),
    "RelaxedEnvironmentVariableValidation": ("1.34", True),
    "ResilientWatchCacheInitialization": ("1.34", True),
    "RetryGenerateName": ("1.32", True),
    "SchedulerQueueingHints": ("1.34", True),
    "SeparateTaintEvictionController": ("1.34", True),
    "ServiceAccountTokenJTI": ("1.32", True),
    "ServiceAccountTokenNodeBinding": ("1.33", True),
    "ServiceAccountTokenNodeBindingValidation": ("1.32", True),
    "ServiceAccountTokenPodNodeInfo": ("1.32", True),
    "ServiceTrafficDistribution": ("1.33", True),
    "SidecarContainers": ("1.33", True),
    "SizeMemoryBackedVolumes": ("1.32", True),
    "StatefulSetAutoDeletePVC": ("1.32", True),
    "StreamingCollectionEncodingToJSON": ("1.34", True),
    "StreamingCollectionEncodingToProtobuf": ("1.34", True),
    "StructuredAuthenticationConfiguration": ("1.34", True),
    "StructuredAuthorizationConfiguration": ("1.32", True),
    "TopologyAwareHints": ("1.33", True),
    "WatchFromStorageWithoutResourceVersion": ("1.33", False),
    # Locked in 1.35 and 1.36 (GA and locked, per the v1.34 -> v1.37 delta below).
    "JobManagedBy": ("1.35", True),
    "PodObservedGenerationTracking": ("1.35", True),
    "InPlacePodVerticalScaling": ("1.35", True),
    "UserNamespacesSupport": ("1.36", True),
    "KubeletPSI": ("1.36", True),
    "ImageVolume": ("1.36", True),
    "ProcMountType": ("1.36", True),
    "NodeLogQuery": ("1.36", True),
    "VolumeAttributesClass": ("1.36", True),
    "MutableCSINodeAllocatableCount": ("1.36", True),
    "CSIServiceAccountTokenSecrets": ("1.36", True),
    "DRAAdminAccess": ("1.36", True),
    # The 1.37 locked list.
    "DeclarativeValidationTakeover": ("1.37", False),
    "DRAExtendedResource": ("1.37", True),
    "DRAPrioritizedList": ("1.37", True),
    "DRAResourceClaimDeviceStatus": ("1.37", True),
    "HostnameOverride": ("1.37", True),
    "HPAConfigurableTolerance": ("1.37", True),
    "InPlacePodVerticalScalingInitContainers": ("1.37", True),
    "NodeDeclaredFeatures": ("1.37", True),
    "PLEGOnDemandRelist": ("1.37", True),
    "PodReadyToStartContainersCondition": ("1.37", True),
    "RelaxedServiceNameValidation": ("1.37", True),
    "WatchCacheInitializationPostStartHook": ("1.37", True),
}

# Gate dependencies the registry declares (component-base AddDependencies).
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "ClusterTrustBundleProjection": ("ClusterTrustBundle",),
}

GATE_RELEASES = RELEASES


def _known_sets() -> dict[str, frozenset[str]]:
    known: dict[str, frozenset[str]] = {}
    current = SNAPSHOT_1_34
    for release in GATE_RELEASES:
        current = (current | ADDED[release]) - REMOVED[release]
        known[release] = current
    return known


KNOWN: dict[str, frozenset[str]] = _known_sets()
