// Preemption explained: POST /<profile>/explain with a preemption body answers
// why each candidate was kept or dropped and which victims are evicted for
// which policy, in both victim modes; its text table; the event note.
#include "schedext/explain/preemption.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explain/explain_fixture.h"
#include "schedext/explain/explain.h"
#include "schedext/server/service.h"

namespace schedext::explain {
namespace {

using nlohmann::json;
using server::Verb;
using namespace explain_testing;  // NOLINT: test vocabulary
using schedext::testing::ArgsShape;
using schedext::testing::PreemptionArgsJson;
using schedext::testing::VictimsJson;

// 3 cpu, 1Gi: n2 (4 cpu, db-1 and log-1 bound: 1.5 cpu used) has 2.5 free.
PodJson BigPod() {
  PodJson pod("big-1");
  pod.Namespace("shop").Request("cpu", "3").Request("memory", "1Gi");
  return pod;
}

PodJson LogPod() {
  PodJson pod("log-1");
  pod.Namespace("shop")
      .Request("cpu", "500m")
      .Request("memory", "1Gi")
      .NodeName("n2")
      .Phase("Running");
  return pod;
}

// A victim the cache does not hold (deleted meanwhile).
PodJson GonePod() {
  PodJson pod("gone");
  pod.Namespace("shop").Request("cpu", "1").NodeName("n4");
  return pod;
}

class PreemptionExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = CacheWith(Nodes(), {BoundPod(), LogPod()});
    profiles_ = BuildProfiles(kConfig);
    ASSERT_EQ(profiles_.size(), 2U);
    service_ =
        std::make_unique<server::ExtenderService>(profiles_, 0, cache_.get(), nullptr, nullptr);
    service_->SetExplain(&explain_verb_);
  }

  // The body stays alive until the next call: scratch_'s decoded request
  // points into it (NoteListsWhatChangedThenCounts reads it afterwards).
  int Call(Verb verb, const std::string& body) {
    body_ = wire::RequestBuffer::CopyOf(body);
    server::RequestSummary summary;
    out_.clear();
    return service_->Handle(verb, 0, body_, scratch_, out_, summary);
  }

  static std::string Body(ArgsShape shape) {
    // Victims most important first, as kube-scheduler sends them.
    return PreemptionArgsJson(BigPod(),
                              {{"n1", {}},
                               {"n2", {BoundPod(), LogPod()}},
                               {"n3", {}},
                               {"n4", {GonePod()}},
                               {"ghost", {}}},
                              shape);
  }

  std::unique_ptr<cluster::ClusterCache> cache_;
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles_;
  const ExplainVerb explain_verb_;
  std::unique_ptr<server::ExtenderService> service_;
  wire::RequestBuffer body_;
  server::Scratch scratch_;
  std::string out_;
};

// Profile "all". n1 fits without evicting anything. n2: NodeResourcesFit's
// preempt hook evicts everything (4 cpu free), then reprieves from the most
// important down: without db-1 evicted 3 cpu are free (enough: spared),
// without log-1 too only 2.5 (needed). n3 has a NoSchedule taint and n4 is
// not ready: filters eviction cannot help drop them. ghost is unknown.
json Expected(bool full_pods) {
  json doc = json::parse(R"json({"profile":"all","verb":"preempt",
    "pod":{"namespace":"shop","name":"big-1","uid":"uid-big-1"},
    "victimsMode":"NodeNameToMetaVictims",
    "policies":[
      {"name":"NodeHealth","filter":true,"evictionCanHelp":false,"preempt":false},
      {"name":"TaintToleration","filter":true,"evictionCanHelp":false,"preempt":false},
      {"name":"NodeLabel","filter":true,"evictionCanHelp":false,"preempt":false},
      {"name":"NodeNumeric","filter":true,"evictionCanHelp":false,"preempt":false},
      {"name":"NodeResourcesFit","filter":true,"evictionCanHelp":true,"preempt":true},
      {"name":"LeastAllocated","filter":false,"evictionCanHelp":false,"preempt":false},
      {"name":"BalancedAllocation","filter":false,"evictionCanHelp":false,"preempt":false}],
    "candidates":[
      {"name":"n1","verdict":"keep","droppedBy":null,"droppedByPreempt":false,"reason":null,
       "victims":[],"why":"kept: no victims proposed"},
      {"name":"n2","verdict":"keep","droppedBy":null,"droppedByPreempt":false,"reason":null,
       "victims":[
         {"uid":"uid-db-1","namespace":"shop","name":"db-1","evict":false,"neededBy":[]},
         {"uid":"uid-log-1","namespace":"shop","name":"log-1","evict":true,
          "neededBy":["NodeResourcesFit"]}],
       "why":"evict shop/log-1 (NodeResourcesFit); spare shop/db-1 (no policy needs it evicted)"},
      {"name":"n3","verdict":"drop","droppedBy":"TaintToleration","droppedByPreempt":false,
       "reason":"node(s) had untolerated taint","victims":[],
       "why":"dropped: TaintToleration: node(s) had untolerated taint (eviction cannot change that)"},
      {"name":"n4","verdict":"drop","droppedBy":"NodeHealth","droppedByPreempt":false,
       "reason":"node(s) were not ready",
       "victims":[{"uid":"uid-gone","namespace":null,"name":null,"evict":false,"neededBy":[]}],
       "why":"dropped: NodeHealth: node(s) were not ready (eviction cannot change that)"},
      {"name":"ghost","verdict":"unchecked","droppedBy":null,"droppedByPreempt":false,
       "reason":null,"victims":[],
       "why":"not checked: the node is unknown to schedext's cache; kept as proposed"}],
    "kept":3,"dropped":2,"evicted":1,"spared":1})json");
  if (full_pods) {
    // The victims came whole: even one the cache no longer holds has a name.
    doc["victimsMode"] = "NodeNameToVictims";
    doc["candidates"][3]["victims"][0]["namespace"] = "shop";
    doc["candidates"][3]["victims"][0]["name"] = "gone";
  }
  return doc;
}

TEST_F(PreemptionExplainTest, EachCandidateAndVictimSaysWhyInBothVictimModes) {
  for (const ArgsShape shape : {ArgsShape::kNodeNames, ArgsShape::kFullNodes}) {
    const bool full = shape == ArgsShape::kFullNodes;
    SCOPED_TRACE(full ? "NodeNameToVictims" : "NodeNameToMetaVictims");
    ASSERT_EQ(Call(Verb::kExplain, Body(shape)), 200) << out_;
    EXPECT_EQ(json::parse(out_), Expected(full)) << out_;

    // The preempt verb answers exactly what the explanation says it keeps.
    ASSERT_EQ(Call(Verb::kPreempt, Body(shape)), 200) << out_;
    EXPECT_EQ(json::parse(out_), json::parse(R"({"NodeNameToMetaVictims":{
        "n1":{"Pods":[],"NumPDBViolations":0},
        "n2":{"Pods":[{"UID":"uid-log-1"}],"NumPDBViolations":0},
        "ghost":{"Pods":[],"NumPDBViolations":0}}})"))
        << out_;
  }
}

TEST_F(PreemptionExplainTest, ErrorsAnswerAsPreemptWould) {
  // Candidates without a pod: a bad request, as for preempt.
  ASSERT_EQ(Call(Verb::kExplain,
                 R"({"Pod":null,"NodeNameToVictims":null,"NodeNameToMetaVictims":)"
                 R"({"n1":{"Pods":[],"NumPDBViolations":0}}})"),
            400);
  EXPECT_EQ(json::parse(out_)["Error"],
            "explain: decode ExtenderPreemptionArgs: /Pod: missing or null");
  // A preemption body whose victims do not decode is a bad preemption body,
  // not a filter body without nodes.
  ASSERT_EQ(Call(Verb::kExplain,
                 R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":{"n1":5}})"),
            400)
      << out_;
  EXPECT_NE(json::parse(out_)["Error"].get<std::string>().find("PreemptionArgs"),
            std::string::npos)
      << out_;
  // Before the cache has synced.
  cluster::ClusterCache empty;
  server::ExtenderService unsynced(profiles_, 0, &empty, nullptr, nullptr);
  unsynced.SetExplain(&explain_verb_);
  wire::RequestBuffer buffer = wire::RequestBuffer::CopyOf(Body(ArgsShape::kNodeNames));
  server::RequestSummary summary;
  out_.clear();
  EXPECT_EQ(unsynced.Handle(Verb::kExplain, 0, buffer, scratch_, out_, summary), 503) << out_;
}

TEST_F(PreemptionExplainTest, TextTable) {
  ASSERT_EQ(Call(Verb::kExplain, Body(ArgsShape::kNodeNames)), 200) << out_;
  const StatusOr<std::string> text = FormatExplanationText(out_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "profile all, pod shop/big-1: preemption on 5 candidate node(s), 3 kept\n"
            "NODE   VERDICT    EVICT  SPARE  WHY\n"
            "n1     keep       0      0      kept: no victims proposed\n"
            "n2     keep       1      1      evict shop/log-1 (NodeResourcesFit); spare "
            "shop/db-1 (no policy needs it evicted)\n"
            "n3     drop       -      -      dropped: TaintToleration: node(s) had untolerated "
            "taint (eviction cannot change that)\n"
            "n4     drop       -      -      dropped: NodeHealth: node(s) were not ready "
            "(eviction cannot change that)\n"
            "ghost  unchecked  0      0      not checked: the node is unknown to schedext's "
            "cache; kept as proposed\n"
            "kube-scheduler then picks one of the kept nodes and evicts the victims listed "
            "for it\n");
  EXPECT_FALSE(FormatPreemptionText(R"({"verb":"preempt"})").ok());
}

TEST_F(PreemptionExplainTest, NoteListsWhatChangedThenCounts) {
  ASSERT_EQ(Call(Verb::kPreempt, Body(ArgsShape::kNodeNames)), 200) << out_;
  const PreemptionExplanation e = ExplainPreemption(
      *profiles_[0], scratch_.preemption, scratch_.candidates,
      std::span<const pipeline::PreemptDecision>(scratch_.decisions.data(),
                                                 scratch_.candidates.size()));
  EXPECT_TRUE(e.Changed());
  EXPECT_EQ(PreemptionNote(e),
            "Preemption by profile all: kept 3 of 5 candidate nodes. n3: dropped: "
            "TaintToleration: node(s) had untolerated taint (eviction cannot change that). n4: "
            "dropped: NodeHealth: node(s) were not ready (eviction cannot change that). n2: "
            "evict shop/log-1 (NodeResourcesFit); spare shop/db-1 (no policy needs it "
            "evicted).");
  EXPECT_EQ(PreemptionNote(e, 1),
            "Preemption by profile all: kept 3 of 5 candidate nodes. n3: dropped: "
            "TaintToleration: node(s) had untolerated taint (eviction cannot change that). 1 "
            "more node dropped: NodeHealth 1. 1 more node kept with fewer victims.");

  // What the scheduler proposed, unchanged: nothing to say.
  ASSERT_EQ(Call(Verb::kPreempt,
                 PreemptionArgsJson(BigPod(), {{"n1", {}}, {"n2", {LogPod()}}},
                                    ArgsShape::kNodeNames)),
            200)
      << out_;
  const PreemptionExplanation same = ExplainPreemption(
      *profiles_[0], scratch_.preemption, scratch_.candidates,
      std::span<const pipeline::PreemptDecision>(scratch_.decisions.data(),
                                                 scratch_.candidates.size()));
  EXPECT_FALSE(same.Changed());
  EXPECT_EQ(PreemptionNote(same), "");
}

TEST(CandidateWhyTest, EveryCase) {
  ExplainedCandidate c;
  c.node = "n";
  c.has_preempters = true;
  c.verdict = ExplainedCandidate::Verdict::kDrop;
  c.dropped_by = "GpuShare";
  c.dropped_by_preempt = true;
  c.reason = "no GPU frees enough memory";
  c.victims.resize(2);
  EXPECT_EQ(CandidateWhy(c),
            "dropped: GpuShare: no GPU frees enough memory (even after evicting all 2 proposed "
            "pods)");
  c.verdict = ExplainedCandidate::Verdict::kKeep;
  c.victims = {{"u1", "ns", "a", true, {}}, {"u2", "", "", true, {}}};
  EXPECT_EQ(CandidateWhy(c),
            "kept as proposed: no policy needs any of the 2 victims evicted, and the reply "
            "cannot name none");
  c.has_preempters = false;
  EXPECT_EQ(CandidateWhy(c), "kept as proposed: no policy of the profile selects victims");
  c.has_preempters = true;
  c.victims = {{"u1", "ns", "a", false, {}},
               {"u2", "", "", true, {"GpuShare", "NodeResourcesFit"}},
               {"u3", "ns", "c", false, {}}};
  EXPECT_EQ(CandidateWhy(c),
            "evict uid u2 (GpuShare, NodeResourcesFit); spare ns/a, ns/c (no policy needs them "
            "evicted)");
}

}  // namespace
}  // namespace schedext::explain
