package console

import (
	"fmt"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// chart is a subscription's attempts of the last 24 hours by outcome, an
// hour a bar, drawn as SVG on the server (the page runs no script) with
// its numbers in words beside it.
type chart struct {
	Bars []bar
	// Ticks label the hour axis, every sixth hour, in UTC.
	Ticks                    []tick
	Succeeded, Failed, Error int
	// Summary says what the chart shows, for those who do not see it.
	Summary string
}

// bar is one hour's stack: its rectangles, bottom up, in chart units.
type bar struct {
	X     int
	Hour  time.Time
	Rects []rect
	Title string
}

// tick is a label of the hour axis, centred on its bar.
type tick struct {
	X     int
	Label string
}

type rect struct {
	Y, Height int
	Class     string
}

// Chart geometry, in SVG user units: the bars stand on the axis at
// chartHeight, the hours' labels below it.
const (
	barWidth    = 10
	barGap      = 2
	chartHeight = 60
	axisHeight  = 14
	tickEvery   = 6
)

// Width is the chart's width.
func (c chart) Width() int { return hours * (barWidth + barGap) }

// Height is the chart's height, its axis labels included.
func (c chart) Height() int { return chartHeight + axisHeight }

// Base is where the bars stand: the axis.
func (c chart) Base() int { return chartHeight }

// LabelY is the baseline of the axis's labels.
func (c chart) LabelY() int { return chartHeight + axisHeight - 3 }

// BarWidth is a bar's width.
func (c chart) BarWidth() int { return barWidth }

// newChart draws subscription id's hours from counts, the oldest hour
// first, ending with the hour of now.
func newChart(id string, counts []domain.AttemptCount, now time.Time) chart {
	last := now.UTC().Truncate(time.Hour)
	byHour := map[time.Time]domain.AttemptCount{}
	for _, c := range counts {
		if c.WebhookID == id {
			byHour[c.Hour.UTC()] = c
		}
	}
	most := 1
	for _, c := range byHour {
		most = max(most, c.Succeeded+c.Failed+c.Errors)
	}
	var ch chart
	for i := range hours {
		hour := last.Add(-time.Duration(hours-1-i) * time.Hour)
		c := byHour[hour]
		ch.Succeeded += c.Succeeded
		ch.Failed += c.Failed
		ch.Error += c.Errors
		b := bar{X: i * (barWidth + barGap), Hour: hour,
			Title: fmt.Sprintf("%s: %d succeeded, %d failed, %d without an answer", hour.Format("15:04Z"), c.Succeeded, c.Failed, c.Errors)}
		y := chartHeight
		for _, part := range []struct {
			n     int
			class string
		}{{c.Succeeded, "succeeded"}, {c.Failed, "failed"}, {c.Errors, "error"}} {
			if part.n == 0 {
				continue
			}
			h := max(1, part.n*chartHeight/most)
			y -= h
			b.Rects = append(b.Rects, rect{Y: y, Height: h, Class: part.class})
		}
		ch.Bars = append(ch.Bars, b)
		if hour.Hour()%tickEvery == 0 {
			ch.Ticks = append(ch.Ticks, tick{X: b.X + barWidth/2, Label: hour.Format("15:04")})
		}
	}
	ch.Summary = fmt.Sprintf("Attempts in the last 24 hours: %d succeeded, %d failed, %d got no answer.", ch.Succeeded, ch.Failed, ch.Error)
	return ch
}
