package console

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"github.com/stbridge/stb/dbsyncers/work"
)

// workPage lists the ManifestWork status family's rows (profile work):
// the clusters with stored statuses, the most recently updated first, and
// with ?cluster= that cluster's latest statuses; at most consoleRows each.
func (c *Console) workPage(w http.ResponseWriter, r *http.Request) {
	cluster := r.URL.Query().Get("cluster")
	data := map[string]any{"Cluster": cluster, "Q": ""}
	if c.pool != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		clusters, err := work.Clusters(ctx, c.pool, consoleRows)
		data["Clusters"], data["Err"] = clusters, err
		if cluster != "" && err == nil {
			rows, err := work.Latest(ctx, c.pool, cluster, consoleRows)
			data["Rows"], data["Err"] = rows, err
		}
	}
	render(w, workTmpl, data)
}

var workTmpl = template.Must(template.New("work").Funcs(consoleFuncs).Parse(consoleHead + `
<h1>ManifestWork statuses</h1>
<p>Profile <code>work</code>: the latest status of each work as its agent reported it (<code>work.resource_status</code>), the most recently updated first.</p>
{{if .Err}}<p class="bad">{{.Err}}</p>{{end}}
<table id="work-clusters"><tr><th>cluster</th><th>works</th><th>deleted</th><th>last update</th></tr>
{{range .Clusters}}<tr><td><a href="/work?cluster={{.Cluster}}">{{.Cluster}}</a></td><td>{{.Resources}}</td><td>{{.Gone}}</td><td>{{when .LastUpdate}}</td></tr>
{{else}}<tr><td colspan="4">no statuses stored</td></tr>{{end}}
</table>
{{if .Cluster}}
<h2>{{.Cluster}}</h2>
<table id="work-rows"><tr><th>source</th><th>resource id</th><th>resourceversion</th><th>sequenceid</th><th>conditions</th><th>event</th><th>event time</th><th>agent</th></tr>
{{range .Rows}}<tr{{if .Deleted}} class="bad"{{end}}><td>{{.Source}}</td><td>{{.ResourceID}}</td><td>{{.ResourceVersion}}</td><td>{{.SequenceID}}</td>
<td>{{if .Deleted}}<b>deleted</b> {{end}}{{range .Conditions}}{{.}} {{end}}</td><td>{{.EventType}}</td><td>{{when .EventTime}}</td><td>{{.Agent}}</td></tr>
{{else}}<tr><td colspan="8">no statuses of this cluster</td></tr>{{end}}
</table>
{{end}}
</body></html>`))
