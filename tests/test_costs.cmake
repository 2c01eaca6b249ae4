# test_costs.cmake: the order in which `ctest -j` starts the long tests, read by ctest after the
# discovered GoogleTest lists (CMakeLists.txt: TEST_INCLUDE_FILES). It changes no test.
#
# COST: roughly the seconds a test takes on the idle 2-core CI machine with a cold compile cache
# (in tiers; measured under load in a full `ctest -j2` and scaled, 2026-11-25).
# ctest starts the costliest tests first; on a clean clone it has no timings of its own
# (Testing/Temporary/CTestCostData.txt), so without these it would start the tests in the order of
# their executables, and the runtime suite, the last, would run its cold set-up at the tail.
# On later runs ctest blends a COST here with its own timings. A name that no longer exists
# is ignored: update the list when a long test is renamed or a new one is added.
#
# RESOURCE_LOCK: tests that compile the same kernels on the sim device (same workload and seed)
# run one after the other, so the second reads the first one's compiles from the shared cache
# ($TUNER_CACHE_DIR) instead of compiling them again at the same time; ctest runs another test
# beside them meanwhile.

# Tests are named here as gtest names them; ctest's names of value-parameterized tests add
# "  # GetParam() = ..." (GoogleTest's discovery keeps it where the case has a name of its own).
# The discovered lists (<target>_TESTS) map one to the other.
get_cmake_property(vars VARIABLES)
foreach(var ${vars})
  if(var MATCHES "_tests_TESTS$")
    foreach(full ${${var}})
      string(REGEX REPLACE " +#.*" "" short "${full}")
      set("ctest_name_of_${short}" "${full}")
    endforeach()
  endif()
endforeach()

function(tuner_test_property property value)
  foreach(name ${ARGN})
    if(DEFINED "ctest_name_of_${name}")
      set_tests_properties("${ctest_name_of_${name}}" PROPERTIES ${property} ${value})
    endif()
  endforeach()
endfunction()

function(tuner_test_cost cost)
  tuner_test_property(COST ${cost} ${ARGN})
endfunction()

set(reduced "Templates/TemplateReducedSpaceCompiles.EveryConfigWithinTheDeviceLimits")
set(every_space "Templates/EverySpaceConfig.LaunchesWithinTheLimitsOfSm80AndSm90")

tuner_test_cost(30
  ${reduced}/gemm_bf16_sm_90_gemm_tc_wgmma
  ${reduced}/gemm_f16_sm_90_gemm_tc_wgmma
  Archs/GemmReducedSpaceCompiles.EveryConfigWithinTheDeviceLimits/sm_90
  Archs/GemmReducedSpaceCompiles.EveryConfigWithinTheDeviceLimits/sm_80)
tuner_test_cost(25
  ${reduced}/batched_gemm_f16_sm_90_batched_gemm_tc_wgmma
  ${reduced}/conv2d_f16_sm_90
  RuntimeLib.ExactShapeGivesTheConfigQueryCallsBest)
tuner_test_cost(20
  SessionStages.EachStrategyProposesWhatAPlainLoopOverItProposes
  RowFullSpaceSample.CompilesWithoutSpillsWithinTheLimits
  Archs/GemmFullSpaceSample.CompilesWithinTheLimitsAndThePicksDoNotSpill/sm_90
  Archs/GemmFullSpaceSample.CompilesWithinTheLimitsAndThePicksDoNotSpill/sm_80
  TemplateOpsCli.TheDefaultTemplateAutoSharesTheBudgetAndGivesTheRestToTheFastest
  ${reduced}/conv2d_bf16_sm_80
  KernelFilesNvcc.EveryKernelFileCompilesForSm90
  KernelFilesNvcc.EveryKernelFileCompilesForSm80)
tuner_test_cost(15
  SessionStages.AResumedSessionObservesTheRecordsFirst
  CompiledPrior.TheFirstProposalIsTheBestByCompiledRegistersAmongThePriorsBest
  ${reduced}/gemm_bf16_sm_90
  ${reduced}/gemm_f16_sm_80
  ${reduced}/gemm_f16_sm_90
  ${reduced}/gemm_bf16_sm_80
  Mpi.AKilledRankCostsItsConfigInFlightNotTheSession
  Cli.SeveralWorkersShareEachBatchAndMeasureEveryConfigOnce)
tuner_test_cost(10
  TuningSession.XgbStartsFromRecordsOfOtherShapesAndGpusUnlessToldNot
  TuningSession.FillsTheBudgetAndResumesWithoutRemeasuring
  TuningSession.XgbSavesItsModelAndTheNextSessionStartsFromIt
  ${reduced}/conv2d_f32_sm_90
  ${reduced}/conv2d_f32_sm_80
  TuningSession.EarlyStopEndsAfterNTrialsWithoutImprovement
  TuningSession.ReplaysTheSameConfigsUnderTheSameSeed
  TemplateOpsCli.QueryRanksEveryTemplateTogetherUnlessOneIsNamed
  Cli.InterruptEndsTheSessionWithWhatWasMeasuredCommitted
  Cli.AWriterHeldOffLongerThanTheBusyTimeoutWaitsAndStoresEverything
  SessionClaims.AWriteWaitsOutALockLongerThanTheBusyTimeout
  Mpi.ThreeRanksFillTheBudgetOnceAndEveryRankMeasures
  Cli.TheCompiledPriorCompilesThePriorsBestAndTheMeasuredConfigComesFromTheCache
  Cli.RecordsReplayDataAndTunesAgainstIt)
tuner_test_cost(6
  ${reduced}/batched_gemm_f32_sm_90
  ${reduced}/batched_gemm_f32_sm_80
  ${reduced}/layernorm_f16_sm_80
  ${reduced}/layernorm_f16_sm_90
  ${reduced}/layernorm_bf16_sm_80
  ${reduced}/layernorm_f32_sm_90
  ${reduced}/layernorm_f32_sm_80
  ${reduced}/softmax_f16_sm_90
  ${reduced}/softmax_bf16_sm_90
  ${reduced}/softmax_f16_sm_80
  ${reduced}/softmax_f32_sm_90
  ${reduced}/softmax_f32_sm_80
  ${every_space}/gemm_M_200_N_136_K_300_f32
  ${every_space}/gemm_M_8192_N_8192_K_8192_f32
  WgmmaFullSpaceSample.CompilesWithoutSpillsWithinTheLimits
  Report.WorkloadReportHasThreeChartsOneLinePerSessionAndThePeakLines
  Cli.KilledMidTuneLeavesAConsistentDatabaseThatResumes
  Ops/TemplateOpsCli.TunesOnTheSimDeviceAndQueriesTheBestRecord/conv2d_bf16
  Ops/TemplateOpsCli.TunesOnTheSimDeviceAndQueriesTheBestRecord/gemm_f16)
# The runtime suite's set-up tunes the same four workloads in each of its tests: one at a time, the
# first (above) compiling, the others reading the cache; ahead of the short tests, not at the tail.
set(runtime_suite_rest
  RuntimeLib.NearestTunedShapeByLogDistanceAndExactOnlyWhenAsked
  RuntimeLib.BestConfigsFileGivesTheSameChoicesAsTheDatabase
  RuntimeLib.TheChosenConfigWritesTheOutputTypeAskedFor
  RuntimeLib.RecordsOfOtherDevicesAndOldTemplateVersionsAreNotUsed
  RuntimeLib.BadInputGetsAStatusAndOneLineNeverAnException
  RuntimeLib.WithoutAGpuLaunchesSayNoDeviceAndOpeningNeedsADeviceName
  RuntimeLib.ConcurrentLookupsAgree)
tuner_test_cost(5 ${runtime_suite_rest})
tuner_test_property(RESOURCE_LOCK runtime_suite_setup RuntimeLib.ExactShapeGivesTheConfigQueryCallsBest
                    ${runtime_suite_rest})
# gemm f32 M=640,N=384,K=256 with seed 9: xgb's and bo's first 16 configs are the same in all three.
foreach(name
    SessionStages.EachStrategyProposesWhatAPlainLoopOverItProposes
    SessionStages.AResumedSessionObservesTheRecordsFirst
    SessionStages.AStrategyThatExpectsTooLittleStopsTheSessionAndSaysWhy)
  tuner_test_property(RESOURCE_LOCK session_stages_gemm_f32 "${name}")
endforeach()
