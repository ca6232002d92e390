"""governed"""
