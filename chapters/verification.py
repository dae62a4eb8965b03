"""Moved: "Why Verification Is Free" was split. The hardware fact is in The Serial Tax, the cost model
on The α Dial, the acceptance rules, their proof and the γ+1 distributions of one pass in A Round.
Its URL still works and shows A Round (ui/content/chapters.py MOVED)."""
from ui.content import chapters

chapters.run_moved("chapters/verification.py")
