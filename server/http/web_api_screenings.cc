// The web API's fleet screenings (docs/web-api.md): /api/v1/screenings, the list newest
// first, and /api/v1/screenings/{id}, one screening's verdicts as the v1 ScreeningReport
// in the proto's JSON mapping with "text": report/screen_view.h's lines, the same as
// `benchctl screen --show`.
#include <utility>

#include "benchfleet/v1/controller.pb.h"
#include "report/json_output.h"
#include "report/screen_view.h"
#include "server/http/web_api.h"
#include "server/http/web_api_internal.h"
#include "server/rpc/screening_convert.h"

namespace bench {

namespace v1 = benchfleet::v1;

HttpResponse WebApi::Screenings(const HttpRequest& request) const {
  if (absl::Status s = web_api::CheckParams(request, {}); !s.ok()) return web_api::JsonError(s);
  v1::ListScreeningsResponse response;
  for (const ScreeningListEntry& entry : reads_->ListScreenings()) {
    ToProto(entry, response.add_screenings());
  }
  return web_api::JsonOk(report::ToJson(response));
}

HttpResponse WebApi::Screening(const HttpRequest& request, const std::string& screening_id) const {
  if (absl::Status s = web_api::CheckParams(request, {}); !s.ok()) return web_api::JsonError(s);
  absl::StatusOr<ScreeningView> view = reads_->Screening(screening_id);
  if (!view.ok()) return web_api::JsonError(view.status());
  v1::ScreeningReport report;
  ToProto(*view, &report);
  return web_api::JsonOk(web_api::WithField(
      report::ToJson(report), "text", report::JsonQuote(report::RenderScreeningReport(report))));
}

}  // namespace bench
